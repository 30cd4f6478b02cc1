// Every error code the API can answer with, in one place (decisions §1). The OpenAPI document
// lists this table too, so clients can rely on the codes being stable.

export const ERROR_CODES = {
  validation_failed: { status: 400, message: 'Validation failed: {reason}' },
  validation_unknown_field: { status: 400, message: "Unknown field '{field}'" },
  malformed_json: { status: 400, message: 'Request body is not valid JSON' },
  body_unreadable: { status: 400, message: 'Request body could not be decoded ({encoding}): {reason}' },
  unsupported_content_encoding: { status: 415, message: 'Content-Encoding {encoding} is not supported: send gzip, deflate, br or none' },
  entity_reference_invalid: { status: 400, message: "{entity} with ID '{id}' does not exist or is not accessible ({field})" },
  entity_network_mismatch: { status: 400, message: "{entity} with ID '{id}' is on another network" },
  auth_not_authenticated: { status: 401, message: 'Not authenticated: send `Authorization: Bearer <key>` or sign in for a session cookie' },
  auth_header_malformed: { status: 401, message: 'Malformed Authorization header: send `Authorization: Bearer <key>`' },
  auth_key_unknown: { status: 401, message: 'Unknown API key: send the secret `key` (scp_u_…) shown once when the key was created, not its id or record' },
  auth_key_expired: { status: 401, message: '{entity} expired at {expired_at}; create a new one' },
  auth_key_revoked: { status: 401, message: '{entity} is disabled (revoked); enable it again or create a new one' },
  auth_session_expired: { status: 401, message: 'Session expired or signed out; sign in again' },
  auth_daemon_id_required: { status: 401, message: "A daemon key needs the X-Daemon-ID header (the daemon's id)" },
  auth_daemon_key_not_created: { status: 401, message: 'Daemon API key not found; register again once it exists' },
  auth_invalid_credentials: { status: 401, message: 'Invalid email or password' },
  auth_permission_denied: { status: 403, message: 'Permission denied: {required} role required' },
  auth_key_network_scoped: { status: 403, message: 'This API key is limited to some networks: organization-wide changes (users, networks, tags, keys, settings) need an unscoped key or a signed-in session' },
  auth_user_context_required: { status: 403, message: 'A daemon key cannot call this route: use a user API key (scp_u_…) or a session' },
  auth_daemon_required: { status: 403, message: 'This route is for daemons: send a daemon key (scp_d_…) with X-Daemon-ID' },
  auth_api_access_disabled: { status: 403, message: 'API access is disabled for this organization' },
  daemon_standby: { status: 403, message: 'Daemon is in standby' },
  daemon_network_mismatch: { status: 403, message: "The daemon's API key is not valid for network '{network_id}'" },
  daemon_identity_mismatch: { status: 403, message: "Daemon ID '{daemon_id}' does not match the X-Daemon-ID header" },
  daemon_mode_mismatch: { status: 400, message: "Daemon '{id}' runs in {mode} mode; this needs a {required} daemon" },
  daemon_pairing_refused: { status: 422, message: 'The agent at {url} refused to pair: {reason}. Nothing was kept (no daemon, no key)' },
  daemon_pairing_failed: { status: 502, message: 'Pairing with the agent at {url} failed: {reason}. Nothing was kept (no daemon, no key)' },
  csrf_origin_mismatch: { status: 403, message: "Cross-site request refused ({origin}): a browser request that changes something must come from this site's own pages" },
  entity_access_denied: { status: 403, message: "You don't have access to this {entity}" },
  entity_not_found: { status: 404, message: "{entity} with ID '{id}' not found" },
  route_not_found: { status: 404, message: 'No route for {method} {path}' },
  download_not_found: { status: 404, message: "No download named '{file}': GET /api/v1/downloads lists them" },
  downloads_not_built: { status: 503, message: "The agent's downloads are not built ({reason}): run `npm run build` (npm start builds them)" },
  method_not_allowed: { status: 405, message: 'Method {method} not allowed on {path}' },
  entity_modified: { status: 409, message: '{entity} was modified by someone else (expected {expected}, actual {actual})' },
  entity_already_exists: { status: 409, message: "A {entity} with {field} '{value}' already exists" },
  outbound_address_refused: { status: 400, message: 'The server does not connect to {detail} ({reason}): see "Outbound requests" in the README' },
  ip_address_out_of_range: { status: 400, message: "IP address {ip} is not inside subnet {subnet}" },
  ip_address_duplicate: { status: 409, message: "IP address {ip} is already in subnet {subnet} on host '{host_name}' ({host_id})" },
  entity_in_use: { status: 409, message: '{entity} is in use by {used_by}' },
  discovery_session_active: { status: 409, message: "Daemon '{daemon_id}' already has a Network discovery session {phase} ({session_id}): wait for it to end, or cancel it" },
  discovery_session_finished: { status: 409, message: "Discovery session '{id}' has already ended ({phase})" },
  discovery_no_target: { status: 409, message: "Nothing to scan: no subnet is approved for daemon '{daemon_id}'. Approve a subnet first (one it suggests, or another subnet of its network: POST /api/v1/daemons/{daemon_id}/targets)" },
  network_not_empty: { status: 409, message: "Network '{id}' still holds {contents}; delete them first, or delete everything with ?cascade=true" },
  csv_import_refused: { status: 422, message: '{rows_refused} row(s) of the CSV file are refused, so nothing was stored: see `refused` (row, column, reason), or preview with dry_run=true' },
  idempotency_key_reused: { status: 422, message: "Idempotency-Key '{key}' was used for a different request: send a new key for a new request" },
  idempotency_secret_not_replayed: { status: 409, message: "The request with Idempotency-Key '{key}' was done (it created {id}), but its answer held a secret shown only once, which is not kept: rotate that key or secret for a new one" },
  event_cursor_expired: { status: 410, message: 'Events up to {after} are past retention (EVENT_RETENTION_DAYS); the oldest kept is {oldest}: re-read the inventory, then follow the feed from the newest event' },
  payload_too_large: { status: 413, message: 'Request body exceeds {limit} bytes' },
  unsupported_media_type: { status: 415, message: 'Request body must be application/json' },
  auth_login_locked: { status: 429, message: 'Too many failed login attempts. Try again in {retry_in}.' },
  rate_limit_exceeded: { status: 429, message: 'Rate limit exceeded. Try again in {retry_after} seconds.' },
  event_streams_exceeded: { status: 429, message: 'This credential already has {limit} open event streams: close one before opening another' },
  topology_busy: { status: 429, message: 'Your organization already has {queued} large topology computations waiting (views, exports, timelines): try again in {retry_after} seconds' },
  internal_error: { status: 500, message: 'Internal server error (request {request_id})' },
  service_unavailable: { status: 503, message: 'Service unavailable: {reason}' },
  topology_timeout: { status: 503, message: 'Computing this topology took longer than {limit_seconds} s and was stopped: narrow it (a smaller max_nodes, tag_ids, another view, or a shorter interval)' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
type ParamValue = string | number | boolean | null;
/** Flat values, plus lists of flat records (e.g. every validation error of a body). */
export type ErrorParams = Record<string, ParamValue | Array<Record<string, ParamValue>>>;

/** The one error type handlers throw; the pipeline turns it into the envelope. */
export class AppError extends Error {
  readonly status: number;
  constructor(readonly code: ErrorCode, readonly params: ErrorParams = {}, message?: string) {
    super(message ?? fillTemplate(ERROR_CODES[code].message, params));
    this.status = ERROR_CODES[code].status;
  }
}

function fillTemplate(template: string, params: ErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ''));
}

// Shorthands for the errors that every module raises.
export const notFound = (entity: string, id: string) => new AppError('entity_not_found', { entity, id });
export const accessDenied = (entity: string, id: string) => new AppError('entity_access_denied', { entity, id });
export const alreadyExists = (entity: string, field: string, value: string) =>
  new AppError('entity_already_exists', { entity, field, value });
export const invalidReference = (entity: string, id: string, field: string) =>
  new AppError('entity_reference_invalid', { entity, id, field });

/**
 * Unique constraints of the schema → what they protect. A violation (raised by PostgreSQL, also at
 * commit for deferred ones) is the client's conflict: 409 entity_already_exists, never a 500.
 */
export const UNIQUE_CONSTRAINTS: Record<string, { entity: string; field: string }> = {
  tags_org_name_uq: { entity: 'Tag', field: 'name' },
  users_email_key: { entity: 'User', field: 'email' },
  ports_host_number_protocol_uq: { entity: 'Port', field: 'number/protocol' },
  ip_addresses_host_subnet_ip_uq: { entity: 'IPAddress', field: 'subnet_id/ip_address' },
};

/**
 * Maps a PostgreSQL unique violation to 409, using the key in its detail as the value. Under row
 * security PostgreSQL leaves the key out of the detail (it could show another organization's row):
 * then the value is the `written` row's fields, when the caller knows what it wrote.
 */
export function fromUniqueViolation(err: { code?: string; constraint?: string; message?: string; detail?: string }, written?: Record<string, unknown>): AppError | undefined {
  if (err.code !== '23505') return undefined;
  const text = `${err.message ?? ''} ${err.detail ?? ''}`;
  const name = err.constraint ?? /constraint "([^"]+)"/.exec(text)?.[1];
  // On the partitioned schema the key is a partition's, named after its table's (migration 24): tags_org_name_uq_p3.
  const known = name ? (UNIQUE_CONSTRAINTS[name] ?? UNIQUE_CONSTRAINTS[name.replace(/_p[0-7]$/, '')]) : undefined;
  if (!known) return undefined;
  // "Key (organization_id, name)=(…, prod) already exists": drop the scoping column(s) of the key
  // (organization_id, which every tenant key carries since migration 23, then the owner column).
  const tuple = /Key \(([^)]*)\)=\((.*?)\) already exists/.exec(text);
  if (!tuple && written) return alreadyExists(known.entity, known.field, known.field.split('/').map((f) => String(written[f] ?? '')).join('/'));
  const columns = tuple ? tuple[1]!.split(', ') : [];
  const values = tuple ? tuple[2]!.split(', ').filter((_, i) => columns[i] !== 'organization_id') : [];
  return alreadyExists(known.entity, known.field, values.slice(values.length > 1 ? 1 : 0).join('/'));
}

/**
 * A foreign-key violation that got past the service's checks because of a concurrent write: deleting
 * a row another one came to reference is 409 entity_in_use; writing a reference to a row deleted
 * meanwhile is 400 entity_reference_invalid. Never a 500.
 */
export function fromForeignKeyViolation(err: { code?: string; message?: string; table?: string; detail?: string }): AppError | undefined {
  if (err.code !== '23503') return undefined;
  // "Key (id)=(…) is still referenced from table "daemons"." / "Key (subnet_id)=(…) is not present in table "subnets"."
  // Keys carry organization_id (migration 23): the column that names the row is the other one. On
  // the partitioned schema the tables named are partitions (hosts_p3): their table is named instead.
  const match = /Key \(([^)]*)\)=\(([^)]*)\)/.exec(err.detail ?? '');
  const pairs = match ? match[1]!.split(', ').map((c, i) => [c, match[2]!.split(', ')[i] ?? ''] as const).filter(([c]) => c !== 'organization_id') : [];
  const key = pairs.length ? [undefined, pairs.map(([c]) => c).join(', '), pairs.map(([, v]) => v).join(', ')] : undefined;
  const table = err.table?.replace(/_p[0-7]$/, '');
  if (/still referenced/.test(err.detail ?? '') || /^update or delete on/.test(err.message ?? '')) {
    const by = /referenced from table "([^"]+)"/.exec(err.detail ?? '')?.[1]?.replace(/_p[0-7]$/, '') ?? 'another entity';
    return new AppError('entity_in_use', { entity: table ?? 'entity', used_by: by });
  }
  return invalidReference(table ?? 'entity', key?.[2] ?? '', key?.[1] ?? 'body');
}

/** A wait in words, rounded up to what a person reads: "10 seconds", "1 minute", "15 minutes" (899 s → 15 minutes). */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}
