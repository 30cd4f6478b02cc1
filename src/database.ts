// The ORM of a process: the pool, every migration and the entities, assembled here (above
// src/core, which knows no module) and used through src/core/db.ts.
import { MikroORM, defineConfig } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { Migration20261122000001Foundation } from '../migrations/Migration20261122000001Foundation.js';
import { Migration20261122000002Inventory } from '../migrations/Migration20261122000002Inventory.js';
import { Migration20261122000003Daemons } from '../migrations/Migration20261122000003Daemons.js';
import { Migration20261122000004DiscoveryTuning } from '../migrations/Migration20261122000004DiscoveryTuning.js';
import { Migration20261122000005HistoryBySet } from '../migrations/Migration20261122000005HistoryBySet.js';
import { Migration20261122000006DiscoveryDigests } from '../migrations/Migration20261122000006DiscoveryDigests.js';
import { Migration20261124000007DaemonPollErrors } from '../migrations/Migration20261124000007DaemonPollErrors.js';
import { Migration20261125000008IdempotencyKeys } from '../migrations/Migration20261125000008IdempotencyKeys.js';
import { Migration20261125000009Operators } from '../migrations/Migration20261125000009Operators.js';
import { Migration20261125000010DaemonAliases } from '../migrations/Migration20261125000010DaemonAliases.js';
import { Migration20261125000011TopologyLayouts } from '../migrations/Migration20261125000011TopologyLayouts.js';
import { Migration20261125000012TopologyPinHistory } from '../migrations/Migration20261125000012TopologyPinHistory.js';
import { Migration20261125000013Events } from '../migrations/Migration20261125000013Events.js';
import { Migration20261125000014OutboxVacuum } from '../migrations/Migration20261125000014OutboxVacuum.js';
import { Migration20261125000015EventsByNetwork } from '../migrations/Migration20261125000015EventsByNetwork.js';
import { Migration20261125000016HistoryParentBtree } from '../migrations/Migration20261125000016HistoryParentBtree.js';
import { Migration20261125000017IdempotencySecrets } from '../migrations/Migration20261125000017IdempotencySecrets.js';
import { Migration20261125000018DaemonTargets } from '../migrations/Migration20261125000018DaemonTargets.js';
import { Migration20261125000019SessionReports } from '../migrations/Migration20261125000019SessionReports.js';
import { Migration20261125000020SnmpDiscovery } from '../migrations/Migration20261125000020SnmpDiscovery.js';
import { Migration20261125000021OutboxWakeups } from '../migrations/Migration20261125000021OutboxWakeups.js';
import { Migration20261125000022CaptureByArguments } from '../migrations/Migration20261125000022CaptureByArguments.js';
import { Migration20261125000023KeysByTenant } from '../migrations/Migration20261125000023KeysByTenant.js';
import { Migration20261125000024PartitionByOrganization } from '../migrations/Migration20261125000024PartitionByOrganization.js';
import { Migration20261128000001DaemonTlsPins } from '../migrations/Migration20261128000001DaemonTlsPins.js';
import { Migration20261128000002SessionSummaries } from '../migrations/Migration20261128000002SessionSummaries.js';
import { Migration20261128000003DaemonHostSuggestions } from '../migrations/Migration20261128000003DaemonHostSuggestions.js';
import { Migration20261201000001HostNameSource } from '../migrations/Migration20261201000001HostNameSource.js';
import { Migration20261201000002HostFacts } from '../migrations/Migration20261201000002HostFacts.js';
import { Migration20261201000003ServiceDefinitions } from '../migrations/Migration20261201000003ServiceDefinitions.js';
import { Migration20261202000001DaemonTargetOptions } from '../migrations/Migration20261202000001DaemonTargetOptions.js';
import { Migration20261202000002ProvenanceIsNoChange } from '../migrations/Migration20261202000002ProvenanceIsNoChange.js';
import { Migration20261202000003HostPresence } from '../migrations/Migration20261202000003HostPresence.js';
import { Migration20261202000004ScanAcknowledged } from '../migrations/Migration20261202000004ScanAcknowledged.js';
import { Migration20261202000005EndedScansIndex } from '../migrations/Migration20261202000005EndedScansIndex.js';
import { Migration20261202000006ChildPresence } from '../migrations/Migration20261202000006ChildPresence.js';
import { Migration20261202000010DiscoverySchedules } from '../migrations/Migration20261202000010DiscoverySchedules.js';
import { Migration20261202000020Alerts } from '../migrations/Migration20261202000020Alerts.js';
import { Migration20261202103001ShareLinks } from '../migrations/Migration20261202103001ShareLinks.js';
import { Migration20261202110000HistoryChangeIndexes } from '../migrations/Migration20261202110000HistoryChangeIndexes.js';
import { Migration20261202110700SubnetCounts } from '../migrations/Migration20261202110700SubnetCounts.js';
import { Migration20261202115300EdgeRoutes } from '../migrations/Migration20261202115300EdgeRoutes.js';
import { Migration20261202135900VolatileOnLiveRow } from '../migrations/Migration20261202135900VolatileOnLiveRow.js';
import { Migration20261202135901OpenStatesByInstant } from '../migrations/Migration20261202135901OpenStatesByInstant.js';
import { Migration20261202140000RowSecurity } from '../migrations/Migration20261202140000RowSecurity.js';
import { Migration20261203133000BareHostsKept } from '../migrations/Migration20261203133000BareHostsKept.js';
import { ensureDatabase } from './core/db.js';
import { SESSION_OPTIONS } from './core/sql.js';
import { accountEntities } from './modules/accounts/entities.js';

/** Every migration, in order. Listed explicitly so compiled and tsx runs find the same set. */
export const MIGRATIONS = [
  { name: 'Migration20261122000001Foundation', class: Migration20261122000001Foundation },
  { name: 'Migration20261122000002Inventory', class: Migration20261122000002Inventory },
  { name: 'Migration20261122000003Daemons', class: Migration20261122000003Daemons },
  { name: 'Migration20261122000004DiscoveryTuning', class: Migration20261122000004DiscoveryTuning },
  { name: 'Migration20261122000005HistoryBySet', class: Migration20261122000005HistoryBySet },
  { name: 'Migration20261122000006DiscoveryDigests', class: Migration20261122000006DiscoveryDigests },
  { name: 'Migration20261124000007DaemonPollErrors', class: Migration20261124000007DaemonPollErrors },
  { name: 'Migration20261125000008IdempotencyKeys', class: Migration20261125000008IdempotencyKeys },
  { name: 'Migration20261125000009Operators', class: Migration20261125000009Operators },
  { name: 'Migration20261125000010DaemonAliases', class: Migration20261125000010DaemonAliases },
  { name: 'Migration20261125000011TopologyLayouts', class: Migration20261125000011TopologyLayouts },
  { name: 'Migration20261125000012TopologyPinHistory', class: Migration20261125000012TopologyPinHistory },
  { name: 'Migration20261125000013Events', class: Migration20261125000013Events },
  { name: 'Migration20261125000014OutboxVacuum', class: Migration20261125000014OutboxVacuum },
  { name: 'Migration20261125000015EventsByNetwork', class: Migration20261125000015EventsByNetwork },
  { name: 'Migration20261125000016HistoryParentBtree', class: Migration20261125000016HistoryParentBtree },
  { name: 'Migration20261125000017IdempotencySecrets', class: Migration20261125000017IdempotencySecrets },
  { name: 'Migration20261125000018DaemonTargets', class: Migration20261125000018DaemonTargets },
  { name: 'Migration20261125000019SessionReports', class: Migration20261125000019SessionReports },
  { name: 'Migration20261125000020SnmpDiscovery', class: Migration20261125000020SnmpDiscovery },
  { name: 'Migration20261125000021OutboxWakeups', class: Migration20261125000021OutboxWakeups },
  { name: 'Migration20261125000022CaptureByArguments', class: Migration20261125000022CaptureByArguments },
  { name: 'Migration20261125000023KeysByTenant', class: Migration20261125000023KeysByTenant },
  { name: 'Migration20261125000024PartitionByOrganization', class: Migration20261125000024PartitionByOrganization },
  { name: 'Migration20261128000001DaemonTlsPins', class: Migration20261128000001DaemonTlsPins },
  { name: 'Migration20261128000002SessionSummaries', class: Migration20261128000002SessionSummaries },
  { name: 'Migration20261128000003DaemonHostSuggestions', class: Migration20261128000003DaemonHostSuggestions },
  { name: 'Migration20261201000001HostNameSource', class: Migration20261201000001HostNameSource },
  { name: 'Migration20261201000002HostFacts', class: Migration20261201000002HostFacts },
  { name: 'Migration20261201000003ServiceDefinitions', class: Migration20261201000003ServiceDefinitions },
  { name: 'Migration20261202000001DaemonTargetOptions', class: Migration20261202000001DaemonTargetOptions },
  { name: 'Migration20261202000002ProvenanceIsNoChange', class: Migration20261202000002ProvenanceIsNoChange },
  { name: 'Migration20261202000003HostPresence', class: Migration20261202000003HostPresence },
  { name: 'Migration20261202000004ScanAcknowledged', class: Migration20261202000004ScanAcknowledged },
  { name: 'Migration20261202000005EndedScansIndex', class: Migration20261202000005EndedScansIndex },
  { name: 'Migration20261202000006ChildPresence', class: Migration20261202000006ChildPresence },
  { name: 'Migration20261202000010DiscoverySchedules', class: Migration20261202000010DiscoverySchedules },
  { name: 'Migration20261202000020Alerts', class: Migration20261202000020Alerts },
  { name: 'Migration20261202103001ShareLinks', class: Migration20261202103001ShareLinks },
  { name: 'Migration20261202110000HistoryChangeIndexes', class: Migration20261202110000HistoryChangeIndexes },
  { name: 'Migration20261202110700SubnetCounts', class: Migration20261202110700SubnetCounts },
  { name: 'Migration20261202115300EdgeRoutes', class: Migration20261202115300EdgeRoutes },
  { name: 'Migration20261202135900VolatileOnLiveRow', class: Migration20261202135900VolatileOnLiveRow },
  { name: 'Migration20261202135901OpenStatesByInstant', class: Migration20261202135901OpenStatesByInstant },
  { name: 'Migration20261202140000RowSecurity', class: Migration20261202140000RowSecurity },
  { name: 'Migration20261203133000BareHostsKept', class: Migration20261203133000BareHostsKept },
];

export async function createOrm(databaseUrl: string, poolMax = 10): Promise<MikroORM> {
  await ensureDatabase(databaseUrl);
  return (await MikroORM.init(
    defineConfig({
      clientUrl: databaseUrl,
      entities: accountEntities,
      extensions: [Migrator],
      migrations: { migrationsList: MIGRATIONS, snapshot: false, transactional: true },
      pool: { min: 0, max: poolMax },
      driverOptions: { options: SESSION_OPTIONS },
      debug: false,
      logger: () => undefined, // pino logs the requests; the ORM stays quiet
      allowGlobalContext: false,
    } as Parameters<typeof defineConfig>[0]),
  )) as unknown as MikroORM;
}

