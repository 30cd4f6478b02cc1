import { Migration } from '@mikro-orm/migrations';
import { HISTORY_TABLES as CAPTURED_BEFORE } from './Migration20261125000022CaptureByArguments.js';

/**
 * Rescans that change nothing write nothing (issue 39.3). A record's `source` says who found it
 * (each metadata entry a discovery type, a daemon and a date), not what it is: a second path to the
 * same unchanged network (the agent's own run, then "Scan now" on its approved targets; another
 * daemon) adds an entry, and that made a history state, an `*.updated` event and a webhook delivery
 * for every host and service it found. `source` is now volatile like last_seen_at and
 * last_discovery_id: still written on every report that brings a new entry (stopped services and
 * the session summary's services_found read it), copied into the open state in place, never a
 * state or an event of its own. The session summary already left it out (src/modules/discovery/
 * sessionSummary.ts, PROVENANCE).
 *
 * The hosts' triggers are made again from the catalog, so they also see the columns added since
 * migration 24 made them (name_source, device_type, device_model, os_name, os_version,
 * os_confidence): a change of those alone had made no state, and no state had them (the capture
 * copies the columns it was told when installed); the open states get them from the live rows. The
 * hosts' digest trigger, generated from the columns too, is made again for the same reason (source
 * stays a change for it: a stored answer carries the source).
 */
export const HISTORY_TABLES: Array<[string, string[]]> = CAPTURED_BEFORE.map(([table, volatile]) => [
  table, ['hosts', 'services'].includes(table) ? [...volatile, 'source'] : volatile,
]);
const RECAPTURED = ['hosts', 'services'];
const HOST_COLUMNS_SINCE = ['name_source', 'device_type', 'device_model', 'os_name', 'os_version', 'os_confidence'];

export class Migration20261202000002ProvenanceIsNoChange extends Migration {
  override up(): void {
    for (const [table, volatile] of HISTORY_TABLES.filter(([t]) => RECAPTURED.includes(t))) {
      this.addSql(`select history_triggers('${table}', array[${volatile.map((c) => `'${c}'`).join(', ')}]::text[])`);
    }
    this.addSql(`select digest_triggers('hosts', 'hosts')`);
    this.addSql(`update hosts_history h set (${HOST_COLUMNS_SINCE.join(', ')}) = row(${HOST_COLUMNS_SINCE.map((c) => `l.${c}`).join(', ')})
                 from hosts l where h.organization_id = l.organization_id and h.id = l.id and h.valid_to is null`);
  }
}
