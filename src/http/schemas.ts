// Joi fragments shared by every module: ids, names, pagination, `at`, colours.
import Joi from 'joi';
import { AppError } from '../core/errors.js';

// Ids are compared as PostgreSQL prints them (lower case), so input is normalised once here.
export const uuid = () => Joi.string().guid({ version: ['uuidv1', 'uuidv2', 'uuidv3', 'uuidv4', 'uuidv5', 'uuidv6', 'uuidv7', 'uuidv8'] }).lowercase();
export const idParams = Joi.object({ id: uuid().required() });
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
/**
 * A body's `id`: any UUID; the nil UUID (what Scanopy's clients send for a new entity) means
 * "assign one" and is dropped here, so a create gets a server-chosen id and a replace the path's.
 */
export const entityId = () =>
  Joi.string().guid().lowercase().custom((value: string) => (value === NIL_UUID ? undefined : value))
    .description('The nil UUID 00000000-0000-0000-0000-000000000000 means: assign one');
export const name = () => Joi.string().trim().min(1).max(100);
export const description = () => Joi.string().max(500).allow(null, '').empty('').default(null);
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:?\d\d)$/; // daemons send nanoseconds; PostgreSQL rounds to µs
/**
 * An ISO 8601 instant with an offset, kept as the client's string: Joi's isoDate() would round it
 * through a JS Date to milliseconds, and updated_at is compared at microsecond precision.
 */
export const timestamp = () =>
  Joi.string()
    .pattern(ISO_INSTANT, 'ISO 8601 date-time with offset')
    .custom((value: string) => {
      if (Number.isNaN(Date.parse(value))) throw new Error('is not a valid date-time');
      // PostgreSQL takes offsets up to ±15:59 (a JS Date takes more): beyond is the client's error.
      const offset = /([+-])(\d\d):?(\d\d)$/.exec(value);
      if (offset && (Number(offset[2]) > 15 || Number(offset[3]) > 59)) throw new Error('has a UTC offset beyond ±15:59');
      return value;
    });

/** An IPv4 or IPv6 address (no prefix); a CIDR of either family. */
export const ipAddress = () => Joi.string().ip({ version: ['ipv4', 'ipv6'], cidr: 'forbidden' });
export const cidr = () => Joi.string().ip({ version: ['ipv4', 'ipv6'], cidr: 'required' });

/** Where an entity came from (decisions §10): `type` is closed; discovery adds `metadata` and `details`. */
export const SOURCE_TYPES = ['Manual', 'System', 'Discovery', 'DiscoveryWithMatch', 'Unknown'] as const;
export const sourceResponse = () => Joi.object({
  type: Joi.string().valid(...SOURCE_TYPES),
  metadata: Joi.array().items(Joi.object().unknown(true)).optional(),
  details: Joi.object().unknown(true).optional(),
}).unknown(true).label('EntitySource');

/** What runs a host or service (decisions §10: kept as given; Scanopy sends Proxmox and Docker). */
export const virtualizationResponse = () => Joi.object({
  type: Joi.string().optional().example('Docker'),
  details: Joi.object({ service_id: uuid().optional() }).unknown(true).optional(),
}).unknown(true).allow(null).label('Virtualization');

export const COLORS = [
  'Pink', 'Rose', 'Red', 'Amber', 'Orange', 'Green', 'Emerald', 'Teal', 'Cyan',
  'Blue', 'Indigo', 'Purple', 'Fuchsia', 'Violet', 'Sky', 'Gray', 'Lime', 'Yellow',
] as const;
export const color = () => Joi.string().valid(...COLORS);

/** A tag-id list: duplicates collapse (decisions §6); existence is checked by the service. */
export const tagIds = () =>
  Joi.array().items(uuid()).max(100).custom((ids: string[]) => [...new Set(ids)]);

/**
 * `at`: an ISO 8601 instant with an offset, not in the future (decisions §5). Kept as a string so
 * PostgreSQL compares it at microsecond precision.
 */
export const at = () =>
  timestamp().custom((value: string) => {
    if (Date.parse(value) > Date.now() + 1000) throw new Error('must not be in the future');
    return value;
  });

/** A list given as `a,b` or as repeated parameters; each item must match `item`. */
export const commaList = (item: RegExp, what: string, max: number) =>
  Joi.alternatives(Joi.array().items(Joi.string()), Joi.string().allow(''))
    .custom((value: string | string[], helpers) => {
      const items = [...new Set((Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase()).filter(Boolean))];
      if (items.length > max) return helpers.message({ custom: `{{#label}} lists more than ${max} items` });
      const bad = items.find((i) => !item.test(i));
      if (bad) return helpers.message({ custom: `{{#label}} item '${bad.slice(0, 80)}' is not ${what}` });
      return items;
    });

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** `ids=a,b` (or repeated): only these entities. */
export const idList = (max = 1000) => commaList(UUID_TEXT, 'a UUID', max).description('A comma list of ids');

export const pagination = {
  limit: Joi.number().integer().min(0).max(1000).default(50),
  offset: Joi.number().integer().min(0).max(2147483647).default(0),
};

/** Query of a paginated list with `at`, plus the route's own filters. */
export const listQuery = (extra: Record<string, Joi.Schema> = {}) => Joi.object({ ...pagination, at: at(), ids: idList(), ...extra });

export const orderQuery = (fields: readonly string[]) => ({
  group_by: Joi.string().valid(...fields).allow(null),
  order_by: Joi.string().valid(...fields).allow(null),
  order_direction: Joi.string().valid('asc', 'desc').allow(null).default('asc'),
});

/** Turns group_by / order_by / order_direction into order terms (decisions §3). */
export function orderTerms(
  q: { group_by?: string | null; order_by?: string | null; order_direction?: 'asc' | 'desc' | null },
  columns: Record<string, string>,
  fallback: string,
): Array<{ column: string; direction: 'asc' | 'desc' }> {
  const terms: Array<{ column: string; direction: 'asc' | 'desc' }> = [];
  if (q.group_by) terms.push({ column: columns[q.group_by]!, direction: 'asc' });
  if (q.order_by) terms.push({ column: columns[q.order_by]!, direction: q.order_direction ?? 'asc' });
  if (!terms.length) terms.push({ column: columns[fallback]!, direction: q.order_direction ?? 'asc' });
  return terms;
}

/**
 * Server-owned fields a client may send back from what it read (GET, change, PUT): accepted and
 * ignored (decisions §1, mass assignment). Anything else unknown is validation_unknown_field.
 */
export const SERVER_OWNED = [
  'organization_id', 'created_at', 'updated_at', 'valid_from', 'valid_to', 'lineage_id', 'source',
  'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'version_status', 'last_used_at', 'user_id',
  // What discovery alone writes, echoed back from a GET.
  'hostname_source', 'name_source', 'device_type', 'device_model', 'os_name', 'os_version', 'os_confidence', 'mac_vendor', 'mac_random', 'fdb_macs',
  // Presence, which discovery records (src/modules/discovery/presence.ts).
  'offline_at',
] as const;

/** Fields Scanopy's published schemas carry that we do not model: accepted and ignored, and listed in the docs. */
export const SCANOPY_IGNORED = {
  apiKey: ['key', 'tags', 'last_used'],
  host: ['sys_descr', 'sys_object_id', 'sys_location', 'sys_contact', 'management_url', 'chassis_id', 'snmp_credential_id'],
  network: ['snmp_credential_id'],
} as const;

export function body(keys: Record<string, Joi.Schema>, ignored: readonly string[] = SERVER_OWNED) {
  const strip = Object.fromEntries(ignored.filter((k) => !(k in keys)).map((k) => [k, Joi.any().strip()]));
  return Joi.object({ ...strip, ...keys }).unknown(false);
}

/**
 * `network_id` in the update body of a network-scoped resource: read-only. The stored one (a GET
 * sent back) is accepted; another is refused (assertSameNetwork), never silently ignored. The
 * declaration is the check: resourceRoutes (PUT) and patchRoute (PATCH) find it in the update
 * schema (readOnlyNetworkOf) and refuse another network before the resource's own update runs.
 */
export const readOnlyNetworkId = (what: string) => uuid().description(
  `Read-only: ${what} never moves to another network. The stored network_id (a GET sent back) is accepted; any other is refused (400 validation_failed, field network_id)`,
).meta({ readOnlyNetworkId: what }); // not a JSON Schema keyword: left out of the OpenAPI document

/** The noun ("a port") when the update schema declares `network_id` read-only (readOnlyNetworkId), else undefined. */
export function readOnlyNetworkOf(update: Joi.Schema): string | undefined {
  const field = (update.describe() as { keys?: Record<string, { metas?: Array<Record<string, unknown>> }> }).keys?.network_id;
  const mark = field?.metas?.find((m) => typeof m.readOnlyNetworkId === 'string');
  return mark?.readOnlyNetworkId as string | undefined;
}

/** A body `network_id` must be the stored one when sent (readOnlyNetworkId). */
export function assertSameNetwork(stored: unknown, given: string | undefined, what: string): void {
  if (given !== undefined && given.toLowerCase() !== stored) {
    throw new AppError('validation_failed', { field: 'network_id', reason: `network_id is read-only: ${what} does not move to another network (it is on ${String(stored)})` });
  }
}

/** A body `id` must equal the path id when sent (a client echoing the resource back). */
export function assertSameId(pathId: string, bodyId: string | undefined): void {
  if (bodyId !== undefined && bodyId !== pathId) {
    throw new AppError('validation_failed', { field: 'id', reason: 'must equal the id in the path' });
  }
}
