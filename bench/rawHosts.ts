// The baseline: `GET /bench/raw-hosts?limit=&offset=` answers the same JSON as
// `GET /api/v1/hosts?limit=&offset=` (Owner's scope: every network of the organization, default
// order created_at, id) from ONE hand-written SQL statement that builds the whole `data` array as
// JSON text inside PostgreSQL; Node only wraps it in the envelope. It runs in the same process and
// Koa app, behind the same request log and error envelope, but without authentication, joi
// validation or the repository layer. With `?auth=session` it also resolves the caller's session
// cookie with the very function the API's `authenticate` uses, to split that cost out.
import type { Context, Next } from 'koa';
import { Db } from '../src/core/db.js';
import type { Services } from '../src/services.js';
import { errorEnvelope, meta } from '../src/http/envelope.js';
import { requestLog } from '../src/http/requestLog.js';
import { SESSION_COOKIE, scopeFromSession } from '../src/core/principal.js';

export const RAW_PATH = '/bench/raw-hosts';

/** ISO 8601 with microseconds and Z, exactly like isoTimestamp() in src/core/historyTable.ts. */
const iso = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Standard columns every inventory row ends with, in the API's order; valid_to is null for live rows. */
const tail = (a: string) =>
  `${a}.first_discovery_id, ${a}.last_discovery_id, ${iso(`${a}.last_seen_at`)} as last_seen_at, ${a}.lineage_id,
   ${iso(`${a}.created_at`)} as created_at, ${iso(`${a}.updated_at`)} as updated_at, ${iso(`${a}.valid_from`)} as valid_from,
   null::text as valid_to`;

/** A JSON array of the rows of `select` (a subquery aliased x), in `order`; '[]' when none. */
const jsonArray = (select: string, order: string) =>
  `coalesce((select array_to_json(array_agg(row_to_json(x) order by ${order})) from (${select}) x), '[]'::json)`;

// row_to_json / array_to_json print compact JSON (json_agg / json_build_object add spaces), so the
// body is byte-for-byte what JSON.stringify makes, except jsonb values (`source`), which PostgreSQL
// prints as {"type": "Manual"}: 1 byte more per object; the bench reports both sizes.
// Interfaces are queried too (the seed has none) so that the work is the same as the API's.
export const RAW_HOSTS_SQL = `
with page as (
  select * from hosts where organization_id = ? order by created_at, id limit ? offset ?
)
select (select count(*) from hosts where organization_id = ?)::int as total,
       (select count(*) from page)::int as n,
       coalesce((select array_to_json(array_agg(row_to_json(h) order by h.created_at collate "C", h.id)) from (
         select p.id, p.organization_id, p.network_id, p.name, p.hostname, p.description, p.hidden, p.tags, p.source,
                p.virtualization, p.credential_assignments, ${tail('p')},
                ${jsonArray(`select i.id, i.organization_id, i.network_id, i.host_id, i.ip_address_id, i.if_index, i.if_type, i.if_name,
                        i.if_descr, i.if_alias, i.mac_address, i.speed_bps, i.admin_status, i.oper_status, i.cdp_address, i.cdp_device_id,
                        i.cdp_platform, i.cdp_port_id, i.lldp_chassis_id, i.lldp_mgmt_addr, i.lldp_port_desc, i.lldp_port_id,
                        i.lldp_sys_desc, i.lldp_sys_name, i.neighbor, ${tail('i')}
                      from interfaces i where i.host_id = p.id`, 'x.if_index, x.id')} as interfaces,
                ${jsonArray(`select a.id, a.organization_id, a.network_id, a.host_id, a.subnet_id, a.ip_address, a.mac_address, a.name,
                        a.position, ${tail('a')} from ip_addresses a where a.host_id = p.id`, 'x.position, x.id')} as ip_addresses,
                ${jsonArray(`select o.id, o.organization_id, o.network_id, o.host_id, o.number, o.protocol, o.type, ${tail('o')}
                      from ports o where o.host_id = p.id`, 'x.number, x.protocol, x.id')} as ports,
                ${jsonArray(`select s.id, s.organization_id, s.network_id, s.host_id, s.name, s.service_definition, s.position, s.source,
                        s.tags, s.virtualization, ${tail('s')},
                        ${jsonArray(`select b.id, b.organization_id, b.network_id, b.service_id, b.type, b.port_id, b.ip_address_id, ${tail('b')}
                              from bindings b where b.service_id = s.id`, 'x.created_at collate "C", x.id')} as bindings
                      from services s where s.host_id = p.id`, 'x.position, x.id')} as services
         from page p
       ) h), '[]'::json)::text as data`;
// (created_at is fixed-width ISO text here, so its "C" order is the timestamp order.)

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
      const limit = Number(ctx.query.limit ?? 50);
      const offset = Number(ctx.query.offset ?? 0);
      const [row] = await db.query<{ total: number; n: number; data: string }>(RAW_HOSTS_SQL, [organizationId, limit, offset, organizationId]);
      const pagination = { total_count: row!.total, limit, offset, has_more: limit > 0 && offset + row!.n < row!.total };
      ctx.type = 'application/json';
      ctx.body = `{"success":true,"data":${row!.data},"meta":${JSON.stringify(meta(services.config, { pagination }))}}`;
    }));
  };
}
