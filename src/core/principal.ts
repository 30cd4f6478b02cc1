// Who is calling: resolves a Bearer key or a session cookie to a Scope in one query.
import { ACROSS_ORGANIZATIONS, type Db } from './db.js';
import { AppError } from './errors.js';
import { sha256Hex } from './secrets.js';
import { ROLE_RANK, type Role, type Scope } from './scope.js';

export const SESSION_COOKIE = 'session_id';
export const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;
/** Sliding expiry is written at most once an hour per session, not on every request. */
const SESSION_REFRESH_MS = 3600 * 1000;

/** The networks a user `u` sees, oldest first: all of the org's for Owner/Admin, the granted ones otherwise. */
export const USER_NETWORKS = `array(
  select n.id from networks n
  where n.organization_id = u.organization_id
    and (u.permissions in ('Owner', 'Admin')
         or exists (select 1 from user_network_access a where a.organization_id = u.organization_id and a.user_id = u.id and a.network_id = n.id))
  order by n.created_at, n.id)`;

interface KeyRow {
  key_id: string; user_id: string; organization_id: string; user_role: Role; key_role: Role;
  key_networks: string[] | null; is_enabled: boolean; expired: boolean; expires_at: Date | null; api_access_enabled: boolean; network_ids: string[];
}

interface SessionRow {
  user_id: string; organization_id: string; user_role: Role; network_ids: string[]; expires_in_ms: number;
}

const minRole = (a: Role, b: Role): Role => (ROLE_RANK[a] <= ROLE_RANK[b] ? a : b);

/**
 * A valid key that its organization refuses (API access off): 403, and the request still spends
 * a token of its user's bucket, not of the client IP's (a script of that user must not be told 429).
 */
export class RefusedCredential extends AppError {
  constructor(readonly userId: string) {
    super('auth_api_access_disabled');
  }
}

export async function scopeFromApiKey(db: Db, token: string): Promise<Scope> {
  const row = await db.one<KeyRow>(
    `select k.id as key_id, u.id as user_id, u.organization_id, u.permissions as user_role, k.permissions as key_role,
            k.network_ids as key_networks, k.is_enabled, coalesce(k.expires_at <= now(), false) as expired, k.expires_at,
            o.api_access_enabled, ${USER_NETWORKS} as network_ids
     from user_api_keys k join users u on u.id = k.user_id join organizations o on o.id = u.organization_id
     where k.key_hash = ?`,
    [sha256Hex(token)],
  );
  assertKeyUsable(row, 'User API Key');
  if (!row.api_access_enabled) throw new RefusedCredential(row.user_id);
  // The key sees the intersection of its own list with what its user sees now (decisions §2).
  const keyNetworks = row.key_networks ? new Set(row.key_networks) : null;
  return {
    kind: 'api_key',
    organizationId: row.organization_id,
    userId: row.user_id,
    role: minRole(row.key_role, row.user_role),
    networkIds: new Set(row.network_ids.filter((id) => !keyNetworks || keyNetworks.has(id))),
    allNetworks: !keyNetworks && ROLE_RANK[row.user_role] >= ROLE_RANK.Admin,
    apiKeyId: row.key_id,
    keyLimitedToNetworks: keyNetworks !== null,
  };
}

/**
 * What is wrong with a key, said precisely (the caller owns the secret, so this reveals nothing to
 * anyone else): unknown, revoked or expired are three different fixes.
 */
function assertKeyUsable<T extends { is_enabled: boolean; expired: boolean; expires_at: Date | null }>(row: T | undefined, entity: string): asserts row is T {
  if (!row) throw new AppError('auth_key_unknown');
  if (!row.is_enabled) throw new AppError('auth_key_revoked', { entity });
  if (row.expired) throw new AppError('auth_key_expired', { entity, expired_at: new Date(row.expires_at!).toISOString() });
}

/** Resolves a session; returns whether its sliding expiry was extended (the cookie is then re-sent). */
/** `extend: false`: only checked (a long-lived stream re-checking its session does not keep it alive). */
export async function scopeFromSession(db: Db, sessionId: string, opts: { extend?: boolean } = {}): Promise<{ scope: Scope; refreshed: boolean }> {
  const idHash = sha256Hex(sessionId);
  const row = await db.one<SessionRow>(
    `select u.id as user_id, u.organization_id, u.permissions as user_role, ${USER_NETWORKS} as network_ids,
            (extract(epoch from (s.expires_at - now())) * 1000)::float8 as expires_in_ms
     from sessions s join users u on u.id = s.user_id
     where s.id_hash = ? and s.expires_at > now()`,
    [idHash],
  );
  if (!row) throw new AppError('auth_session_expired');
  const refreshed = opts.extend !== false && SESSION_TTL_MS - row.expires_in_ms > SESSION_REFRESH_MS;
  if (refreshed) {
    await db.query(`update sessions set expires_at = now() + make_interval(secs => ?) where id_hash = ?`, [SESSION_TTL_MS / 1000, idHash]);
  }
  return {
    scope: {
      kind: 'session',
      organizationId: row.organization_id,
      userId: row.user_id,
      role: row.user_role,
      networkIds: new Set(row.network_ids),
      allNetworks: ROLE_RANK[row.user_role] >= ROLE_RANK.Admin,
    },
    refreshed,
  };
}

interface DaemonKeyRow {
  key_id: string; organization_id: string; network_id: string; user_id: string | null; is_enabled: boolean; expired: boolean; expires_at: Date | null;
}

/**
 * A daemon: `Bearer scp_d_…` (or a legacy unprefixed key) with `X-Daemon-ID`. Its scope is the
 * key's one network. Unknown key: 401 `auth_daemon_key_not_created` while no daemon with that id
 * exists (the daemon's "retry registering" signal), else 401 `auth_not_authenticated`.
 */
export async function scopeFromDaemonKey(db: Db, token: string, daemonId: string | undefined): Promise<Scope> {
  const row = await db.one<DaemonKeyRow>(
    `select k.id as key_id, k.organization_id, k.network_id, k.user_id, k.is_enabled, coalesce(k.expires_at <= now(), false) as expired, k.expires_at
     from daemon_api_keys k where k.key_hash = ?`,
    [sha256Hex(token)],
  );
  // Without a daemon id an unknown token is just an unknown key (a user's typo as often as not).
  if (!daemonId || !UUID.test(daemonId)) throw new AppError(row ? 'auth_daemon_id_required' : 'auth_key_unknown');
  const id = daemonId.toLowerCase();
  if (!row) {
    // The daemon protocol's signal (reference §3.1): no key yet for a new daemon → it registers again.
    // No key, so no organization: whether any organization has a daemon with this id (only on this refusal).
    const known = await db.one(`${ACROSS_ORGANIZATIONS} select 1 from daemons where id = ?`, [id]);
    throw new AppError(known ? 'auth_not_authenticated' : 'auth_daemon_key_not_created');
  }
  assertKeyUsable(row, 'Daemon API Key');
  // An id another organization's daemon had first: this organization's daemon has its own row.
  const alias = await db.one<{ daemon_id: string }>(`select daemon_id from daemon_aliases where organization_id = ? and external_id = ?`, [row.organization_id, id]);
  return {
    kind: 'daemon',
    organizationId: row.organization_id,
    userId: row.user_id ?? '',
    role: 'Member',
    networkIds: new Set([row.network_id]),
    allNetworks: false,
    apiKeyId: row.key_id,
    daemonId: alias?.daemon_id ?? id,
    daemonAlias: alias ? { external: id, internal: alias.daemon_id } : undefined,
  };
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
