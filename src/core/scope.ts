// Tenancy in one place. Every request that passes authentication carries a Scope: the
// organization, the role and the concrete set of networks the principal may touch now.
// Repositories take a Scope and filter by it, so no query can forget the tenant.
import type { Actor } from './db.js';
import { AppError, accessDenied, notFound } from './errors.js';

/** The roles of decisions §2, highest first. */
export const ROLES = ['Owner', 'Admin', 'Member', 'Viewer'] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_RANK: Record<Role, number> = { Owner: 4, Admin: 3, Member: 2, Viewer: 1 };

/** share_link: an anonymous reader of one network's map through a share link (src/modules/shareLinks), never a route's caller. */
export type PrincipalKind = 'session' | 'api_key' | 'daemon' | 'share_link';

export interface Scope {
  kind: PrincipalKind;
  organizationId: string;
  userId: string;
  role: Role;
  /** The networks this principal may see: user's grants (all for Owner/Admin) ∩ the key's list. */
  networkIds: ReadonlySet<string>;
  /**
   * Owner/Admin without a key restriction: every network of the organization, including ones
   * deleted since (so their history and `at` reads stay visible).
   */
  allNetworks: boolean;
  apiKeyId?: string;
  /** An API key limited to a list of networks: it may act only on objects of those networks. */
  keyLimitedToNetworks?: boolean;
  /** For a daemon: the id it announces in X-Daemon-ID (its existence is checked by the handlers). */
  daemonId?: string;
  /**
   * A daemon whose own id was taken by another organization's daemon: `daemonId` is then its
   * row's id, and the id it speaks with is `external` (the pipeline translates both ways).
   */
  daemonAlias?: { external: string; internal: string };
}

/** `value` with every string equal to `from` (any case) replaced by `to`, at any depth. */
export function replaceId<T>(value: T, from: string, to: string): T {
  const f = from.toLowerCase();
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.toLowerCase() === f ? to : v;
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object' && !(v instanceof Date)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

export function canSeeNetwork(scope: Scope, networkId: string): boolean {
  return scope.allNetworks || scope.networkIds.has(networkId);
}

export function hasRole(scope: Scope, required: Role): boolean {
  return ROLE_RANK[scope.role] >= ROLE_RANK[required];
}

export function requireRole(scope: Scope, required: Role): void {
  if (!hasRole(scope, required)) throw new AppError('auth_permission_denied', { required });
}

/**
 * The one authorization check over a set of network ids: every id must be a network of the
 * caller's organization (else 404, never revealing another tenant) and inside the caller's
 * scope (else 403). `knownNetworkIds` are the org's networks that exist, looked up by the caller.
 */
export function assertNetworksVisible(scope: Scope, requested: Iterable<string>, orgNetworkIds: ReadonlySet<string>): void {
  for (const id of requested) {
    if (!orgNetworkIds.has(id)) throw notFound('Network', id);
    if (!canSeeNetwork(scope, id)) throw accessDenied('Network', id);
  }
}

/** The actor the events of this principal's writes name (src/core/db.ts WriteContext). */
export function actorOf(scope: Scope | undefined): Actor | undefined {
  if (!scope) return undefined;
  if (scope.kind === 'daemon') return { type: 'daemon', id: scope.daemonId };
  if (scope.kind === 'api_key') return { type: 'api_key', id: scope.apiKeyId };
  return { type: 'user', id: scope.userId };
}
