// A deleted network back from history: the network and everything it held at an instant, as new
// current states with the same ids (so references, pins and links keep working), in one transaction.
// Daemons and their keys are not brought back: a credential that was deleted must not start working
// again behind the operator's back; a daemon is provisioned anew.
import type { Db } from '../../core/db.js';
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

async function liveColumns(db: Db, table: string): Promise<string[]> {
  const rows = await db.query<{ attname: string }>(
    `select attname from pg_attribute where attrelid = ?::regclass and attnum > 0 and not attisdropped order by attnum`,
    [table],
  );
  return rows.map((r) => r.attname);
}

/** The states valid at `at` of one table's rows on the network, inserted as live rows; tag ids deleted since are dropped. */
async function restoreTable(db: Db, table: string, networkColumn: string, networkId: string, at: string): Promise<number> {
  const columns = await liveColumns(db, table);
  const select = columns.map((c) =>
    c === 'tags' ? `array(select x from unnest(h.tags) with ordinality u(x, n) where x in (select id from tags where organization_id = h.organization_id) order by n)` : `h.${c}`,
  );
  const rows = await db.query(
    `insert into ${table} (${columns.join(', ')})
     select ${select.join(', ')} from ${table}_history h
      where h.${networkColumn} = ? and tstzrange(h.valid_from, h.valid_to) @> ?::timestamptz
        and not exists (select 1 from ${table} l where l.id = h.id)
     returning id`,
    [networkId, at],
  );
  return rows.length;
}

/** How many rows of each table came back. */
export async function restoreNetwork(db: Db, scope: Scope, id: string, at: string): Promise<Record<string, number>> {
  return db.transaction(async (tx) => {
    const then = await tx.one<{ organization_id: string }>(
      `select organization_id from networks_history where id = ? and tstzrange(valid_from, valid_to) @> ?::timestamptz`,
      [id, at],
    );
    if (!then || then.organization_id !== scope.organizationId) throw notFound('Network', id);
    if (!canSeeNetwork(scope, id)) throw accessDenied('Network', id);
    const live = await tx.one(`select 1 from networks where id = ? and organization_id = ? for update`, [id, scope.organizationId]);
    if (live) throw new AppError('entity_already_exists', { entity: 'Network', field: 'id', value: id });
    await restoreTable(tx, 'networks', 'id', id, at);
    const restored: Record<string, number> = {};
    for (const table of INVENTORY_TABLES) restored[table] = await restoreTable(tx, table, 'network_id', id, at);
    return restored;
  });
}
