// The baseline: `GET /bench/raw-hosts?limit=&offset=` answers the same JSON as
// `GET /api/v1/hosts?limit=&offset=` (Owner's scope: every network of the organization, default
// order created_at, id) from ONE SQL statement that builds the whole `data` array as JSON text
// inside PostgreSQL; Node only wraps it in the envelope. It runs in the same process and Koa app,
// behind the same request log and error envelope, but without authentication, joi validation or
// the repository layer. With `?auth=session` it also resolves the caller's session cookie with the
// very function the API's `authenticate` uses, to split that cost out. `?at=` (the twins, as of an
// instant) and `?tag=` (the tag filter) are the variants bench/growth.ts measures.
//
// The statement is written from the service's own declarations, so that a column, a child list or
// an order added to the service later cannot leave the baseline answering less (hand-written column
// lists did, and nothing ran the bench to notice): each table's columns are its HistoryTable's
// (src/modules/*/table.ts), timestamps are the ones HistoryTable.toResponse formats
// (isTimestampColumn), the children's order is hostView.ts's HOST_CHILD_ORDER and BINDING_ORDER,
// and `status` is presence.ts's statusClause (the SQL twin of the hostStatus() the API applies).
// What is hand-written is the shape: one statement, JSON built by PostgreSQL.
// test/bench/baselines.spec.ts checks that its answer is deep-equal to the API's on a seeded set
// where every declared column has a value.
import type { Context, Next } from 'koa';
import { isDeepStrictEqual } from 'node:util';
import type { AppConfig } from '../src/config.js';
import { Db } from '../src/core/db.js';
import { isTimestampColumn, type HistoryTable } from '../src/core/historyTable.js';
import type { Services } from '../src/services.js';
import { errorEnvelope, meta } from '../src/http/envelope.js';
import { requestLog } from '../src/http/requestLog.js';
import { SESSION_COOKIE, scopeFromSession } from '../src/core/principal.js';
import { BINDING_ORDER, bindingTable } from '../src/modules/bindings/table.js';
import { HOST_CHILD_ORDER } from '../src/modules/hosts/hostView.js';
import { HOST_STATUSES, statusClause } from '../src/modules/hosts/presence.js';
import { hostTable } from '../src/modules/hosts/table.js';
import { interfaceTable } from '../src/modules/interfaces/table.js';
import { ipAddressTable } from '../src/modules/ipAddresses/table.js';
import { portTable } from '../src/modules/ports/table.js';
import { serviceTable } from '../src/modules/services/table.js';

export const RAW_PATH = '/bench/raw-hosts';

/** ISO 8601 with microseconds and Z, exactly like isoTimestamp() in src/core/historyTable.ts. */
const iso = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export interface RawHostsQuery {
  organizationId: string;
  limit: number;
  offset: number;
  /** As of this instant (ISO 8601): the states (HistoryTable.states), as `GET /api/v1/hosts?at=`. */
  at?: string;
  /** Only hosts with this tag, as `?tag_ids=<one tag>`. */
  tagId?: string;
  /** The instant `status` is computed for (default: now; with `at`, `at`, as the API does). */
  now?: string;
}

/**
 * The baseline's statement and its parameters (`?` placeholders, bound in text order: the text is
 * built left to right and every bound value is pushed where its `?` is written).
 */
export function rawHostsStatement(q: RawHostsQuery): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const bind = (value: unknown, cast = '') => {
    params.push(value);
    return `?${cast}`;
  };
  const from = (table: HistoryTable, alias: string) => (q.at ? `${table.states} ${alias}` : `${table.spec.table} ${alias}`);
  // Every condition names the organization (bound, not correlated): one partition of a partitioned
  // table (npm run audit:pruning checks the statements the bench sends as it checks the service's).
  const scope = (alias: string) =>
    `${alias}.organization_id = ${bind(q.organizationId)}${q.at ? ` and tstzrange(${alias}.valid_from, ${alias}.valid_to) @> ${bind(q.at, '::timestamptz')}` : ''}`;
  /** The table's declared columns (its HistoryTable, in response order) as the API answers them, and valid_to. */
  const columns = (table: HistoryTable, alias: string) => [
    ...table.spec.columns.map((c) => (isTimestampColumn(c) ? `${iso(`${alias}.${c}`)} as ${c}` : `${alias}.${c}`)),
    q.at ? `${iso(`${alias}.valid_to`)} as valid_to` : 'null::text as valid_to',
  ].join(', ');
  /** The API's order of a child list (written over alias t), over the aggregated rows x; timestamps are fixed-width ISO text there, so "C" order is time order. */
  const orderOfRows = (order: string) => order.replace(/\bt\.(\w+)/g, (_m, c: string) => (isTimestampColumn(c) ? `x.${c} collate "C"` : `x.${c}`));
  /** A JSON array of the rows of `select` (a subquery aliased x), in `order`; '[]' when none. */
  const jsonArray = (select: () => string, order: string) =>
    `coalesce((select array_to_json(array_agg(row_to_json(x) order by ${orderOfRows(order)})) from (${select()}) x), '[]'::json)`;
  const children = (table: HistoryTable, alias: string, parent: string, extra = () => '') =>
    `select ${columns(table, alias)}${extra()} from ${from(table, alias)} where ${alias}.${parent} = t.id and ${scope(alias)}`;
  const now = q.now ?? q.at ?? new Date().toISOString();
  const status = () => `case ${HOST_STATUSES.map((s) => {
    const [sql, values] = statusClause(s, now, q.organizationId);
    let i = 0;
    return `when ${sql.replace(/\?/g, () => bind(values[i++]))} then '${s}'`;
  }).join(' ')} end as status`;
  const hostFilter = (alias: string) => `${scope(alias)}${q.tagId ? ` and ${alias}.tags && array[${bind(q.tagId, '::uuid')}]` : ''}`;

  // row_to_json / array_to_json print compact JSON (json_agg / json_build_object add spaces), so the
  // body is byte-for-byte what JSON.stringify makes, except jsonb values (`source`), which PostgreSQL
  // prints as {"type": "Manual"}: 1 byte more per object; the bench reports both sizes.
  const sql = `
with page as (
  select * from ${from(hostTable, 'p')} where ${hostFilter('p')} order by p.created_at, p.id limit ${bind(q.limit)} offset ${bind(q.offset)}
)
select (select count(*) from ${from(hostTable, 'c')} where ${hostFilter('c')})::int as total,
       (select count(*) from page)::int as n,
       coalesce((select array_to_json(array_agg(row_to_json(h) order by h.created_at collate "C", h.id)) from (
         select ${columns(hostTable, 't')}, ${status()},
                ${jsonArray(() => children(interfaceTable, 'i', 'host_id'), HOST_CHILD_ORDER.interfaces)} as interfaces,
                ${jsonArray(() => children(ipAddressTable, 'a', 'host_id'), HOST_CHILD_ORDER.ip_addresses)} as ip_addresses,
                ${jsonArray(() => children(portTable, 'o', 'host_id'), HOST_CHILD_ORDER.ports)} as ports,
                ${jsonArray(() => children(serviceTable, 's', 'host_id', () => `,
                        ${jsonArray(() => `select ${columns(bindingTable, 'b')} from ${from(bindingTable, 'b')} where b.service_id = s.id and ${scope('b')}`, BINDING_ORDER)} as bindings`),
                  HOST_CHILD_ORDER.services)} as services
         from page t
       ) h), '[]'::json)::text as data`;
  // (created_at is fixed-width ISO text in h, so its "C" order is the timestamp order.)
  return { sql, params };
}

/** The baseline's whole answer (the envelope around the statement's JSON text), as the route sends it. */
export async function rawHostsBody(db: Db, config: AppConfig, q: RawHostsQuery): Promise<string> {
  const { sql, params } = rawHostsStatement(q);
  const [row] = await db.query<{ total: number; n: number; data: string }>(sql, params);
  const pagination = { total_count: row!.total, limit: q.limit, offset: q.offset, has_more: q.limit > 0 && q.offset + row!.n < row!.total };
  return `{"success":true,"data":${row!.data},"meta":${JSON.stringify(meta(config, { pagination }))}}`;
}

/**
 * Middleware placed first in the app: answers only its own path and passes everything else on,
 * so the API's routes and middleware are untouched.
 */
export function rawHostsRoute(services: Services) {
  // Same request log as the API, with the Prometheus hook when this version of the app has one.
  const observe = (services as { metrics?: { observeRequest?: (ctx: Context, seconds: number) => void } }).metrics?.observeRequest;
  const log = requestLog(services.logger, observe);
  const envelope = errorEnvelope(services.config);
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== RAW_PATH || ctx.method !== 'GET') return next();
    await log(ctx, () => envelope(ctx, async () => {
      // Same pool and driver path as the API (Db.query → MikroORM execute → kysely → pg).
      const db = new Db(services.orm.em.fork());
      let organizationId = String(ctx.query.organization_id ?? '');
      if (!/^[0-9a-f-]{36}$/.test(organizationId) && ctx.query.auth !== 'session') throw new Error('organization_id or auth=session required');
      if (ctx.query.auth === 'session') {
        organizationId = (await scopeFromSession(db, ctx.cookies.get(SESSION_COOKIE) ?? '')).scope.organizationId;
      }
      const at = typeof ctx.query.at === 'string' ? ctx.query.at : undefined;
      const tagId = typeof ctx.query.tag === 'string' ? ctx.query.tag : undefined;
      ctx.type = 'application/json';
      ctx.body = await rawHostsBody(db, services.config, { organizationId, limit: Number(ctx.query.limit ?? 50), offset: Number(ctx.query.offset ?? 0), at, tagId });
    }));
  };
}

/** Where two parsed bodies first differ (for a loud failure message); null when deep-equal. */
export function firstDifference(a: unknown, b: unknown, path = '$'): string | null {
  if (isDeepStrictEqual(a, b)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference((a as any)[k], (b as any)[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  return `${path}: ${JSON.stringify(a)?.slice(0, 200)} !== ${JSON.stringify(b)?.slice(0, 200)}`;
}

/**
 * The API's list and the baseline for each query string (`limit=…&offset=…`, optionally `at=`,
 * `tag_ids=<one tag>`): deep-equal bodies after parsing, or the first difference. `get(path)`
 * answers the status and text of a GET as the caller's Owner (a session cookie).
 */
export async function compareHostLists(
  get: (path: string) => Promise<{ status: number; text: string }>, organizationId: string, queries: string[],
): Promise<Array<{ query: string; apiBytes: number; rawBytes: number; apiCount: number; difference: string | null }>> {
  const out = [];
  for (const query of queries) {
    const api = await get(`/api/v1/hosts?${query}`);
    if (api.status !== 200) throw new Error(`GET /api/v1/hosts?${query}: ${api.status} ${api.text.slice(0, 300)}`);
    const rawQuery = query.replace(/\btag_ids=/, 'tag=');
    const raw = await get(`${RAW_PATH}?${rawQuery}&organization_id=${organizationId}`);
    if (raw.status !== 200) throw new Error(`GET ${RAW_PATH}?${rawQuery}: ${raw.status} ${raw.text.slice(0, 300)}`);
    const apiJson = JSON.parse(api.text);
    out.push({
      query, apiBytes: Buffer.byteLength(api.text), rawBytes: Buffer.byteLength(raw.text), apiCount: apiJson.data.length,
      difference: firstDifference(apiJson, JSON.parse(raw.text)),
    });
  }
  return out;
}
