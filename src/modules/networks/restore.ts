// A deleted network back from history: the network and everything it held at an instant, as new
// current states with the same ids (so references, pins and links keep working), in one transaction.
// Daemons and their keys are not brought back: a credential that was deleted must not start working
// again behind the operator's back; a daemon is provisioned anew.
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import { AppError, accessDenied, notFound } from '../../core/errors.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';

/** Parents before children, so that every foreign key finds its row. */
const INVENTORY_TABLES = ['subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies'] as const;

/** What deleting a network would take with it. */
export async function countContents(db: Db, organizationId: string, networkId: string): Promise<Record<string, number>> {
  const owned = 'organization_id = ? and network_id = ?';
  const row = await db.one<Record<string, string>>(
    `select (select count(*) from hosts where ${owned}) as hosts,
            (select count(*) from subnets where ${owned}) as subnets,
            (select count(*) from dependencies where ${owned}) as dependencies,
            (select count(*) from daemons where ${owned}) as daemons,
            (select count(*) from daemon_api_keys where ${owned}) as daemon_api_keys`,
    Array.from({ length: 5 }, () => [organizationId, networkId]).flat(),
  );
  return Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)]));
}

/** What the network holds, as its page and the question before deleting it say: countContents and its hosts' services. */
export async function contentSummary(db: Db, organizationId: string, networkId: string): Promise<Record<string, number>> {
  const counts = await countContents(db, organizationId, networkId);
  const services = await db.one<{ n: string }>(`select count(*) as n from services where organization_id = ? and network_id = ?`, [organizationId, networkId]);
  const { hosts, subnets, ...rest } = counts;
  return { hosts: hosts!, services: Number(services!.n), subnets: subnets!, ...rest };
}

async function liveColumns(db: Db, table: string): Promise<string[]> {
  const rows = await db.query<{ attname: string }>(
    `select attname from pg_attribute where attrelid = ?::regclass and attnum > 0 and not attisdropped order by attnum`,
    [table],
  );
  return rows.map((r) => r.attname);
}

/**
 * The states valid at `at` of one table's rows on the network, inserted as live rows; tag ids deleted
 * since are dropped. A row whose id is live again anywhere is left out: ids are the same in every
 * organization (daemons choose some, and ingest gives a fresh one to an id another organization has),
 * so that question reads every organization's rows, in a statement of its own; everything else reads
 * and writes this organization's.
 */
async function restoreTable(db: Db, organizationId: string, table: string, networkColumn: string, networkId: string, at: string): Promise<number> {
  const columns = await liveColumns(db, table);
  const select = columns.map((c) =>
    c === 'tags' ? `array(select x from unnest(h.tags) with ordinality u(x, n) where x in (select id from tags where organization_id = h.organization_id) order by n)` : `h.${c}`,
  );
  const statesThen = `from ${table}_history h where h.organization_id = ? and h.${networkColumn} = ? and tstzrange(h.valid_from, h.valid_to) @> ?::timestamptz`;
  const liveAnywhere = await db.query<{ id: string }>(
    `${ACROSS_ORGANIZATIONS} select l.id from ${table} l where l.id in (select h.id ${statesThen})`,
    [organizationId, networkId, at],
  );
  const rows = await db.query(
    `insert into ${table} (${columns.join(', ')})
     select ${select.join(', ')} ${statesThen}
        and h.id <> all(?::uuid[])
     returning id`,
    [organizationId, networkId, at, liveAnywhere.map((r) => r.id)],
  );
  return rows.length;
}

/** How many rows of each table came back. */
export async function restoreNetwork(db: Db, scope: Scope, id: string, at: string): Promise<Record<string, number>> {
  return db.transaction(async (tx) => {
    // Another organization's network is as unknown as one that never was.
    const then = await tx.one(
      `select 1 from networks_history where organization_id = ? and id = ? and tstzrange(valid_from, valid_to) @> ?::timestamptz`,
      [scope.organizationId, id, at],
    );
    if (!then) throw notFound('Network', id);
    if (!canSeeNetwork(scope, id)) throw accessDenied('Network', id);
    const live = await tx.one(`select 1 from networks where id = ? and organization_id = ? for update`, [id, scope.organizationId]);
    if (live) throw new AppError('entity_already_exists', { entity: 'Network', field: 'id', value: id });
    await restoreTable(tx, scope.organizationId, 'networks', 'id', id, at);
    const restored: Record<string, number> = {};
    for (const table of INVENTORY_TABLES) restored[table] = await restoreTable(tx, scope.organizationId, table, 'network_id', id, at);
    return restored;
  });
}
