// The list of any network-level resource: `network_id` filter (decisions §3), equality filters on
// the given columns, ordering, pagination and `at`, through the resource's HistoryTable.
import type { Db } from '../../core/db.js';
import type { HistoryTable, Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { orderTerms } from '../../http/schemas.js';
import { networkService } from './service.js';

export interface ScopedListOptions {
  /** Query parameters that filter by equality on the column of the same name (host_id, service_id…). */
  filters?: string[];
  /** Order fields of the API → columns. */
  order: Record<string, string>;
  /** Turns the page of rows into responses (e.g. attaching children). */
  present?: (db: Db, scope: Scope, rows: Row[], at?: string) => Promise<Row[]>;
}

export async function listNetworkScoped(table: HistoryTable, db: Db, scope: Scope, q: Record<string, any>, opts: ScopedListOptions) {
  const where: Array<[string, unknown[]]> = [];
  if (q.network_id) {
    await networkService.assertFilterable(db, scope, q.network_id, q.at);
    where.push(['t.network_id = ?', [q.network_id]]);
  }
  for (const f of opts.filters ?? []) if (q[f] !== undefined) where.push([`t.${f} = ?`, [q[f]]]);
  const { rows, total } = await table.list(db, scope, {
    where, ids: q.ids, order: orderTerms(q, opts.order, 'created_at'), limit: q.limit, offset: q.offset, at: q.at,
  });
  return Page.of(opts.present ? await opts.present(db, scope, rows, q.at) : rows, total, q.limit, q.offset);
}
