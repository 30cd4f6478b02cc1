// Share links: a read-only link to one network's map (a view, live or as of a fixed instant) that
// works without signing in until it expires or is revoked. The token (`scp_s_` + 32 base62) is
// shown once; only its SHA-256 is stored, and a read finds the link by that digest (an index
// lookup on a hash: nothing about the token is compared byte by byte). Unknown, malformed,
// expired, revoked, a deleted network, or a creator no longer Owner/Admin: one and the same 404.
// A reader gets a Scope of that one network (kind `share_link`, role Viewer) handed to the map's
// own service; the token is no credential anywhere else (authenticate.ts never resolves it).
import { randomUUID } from 'node:crypto';
import { ACROSS_ORGANIZATIONS, Db } from '../../core/db.js';
import { AppError, notFound } from '../../core/errors.js';
import { isoTimestamp } from '../../core/historyTable.js';
import { randomBase62, sha256Hex } from '../../core/secrets.js';
import type { Scope } from '../../core/scope.js';
import { networkService } from '../networks/service.js';
import type { View } from '../topology/graph.js';
import { MAX_SHARE_DAYS, SHARE_TOKEN } from './schemas.js';

export const SHARE_TOKEN_PREFIX = 'scp_s_';

export interface ShareLinkInput { view: View; at: string | null; expires_at: string; label: string | null }

interface ShareLinkRow {
  id: string; organization_id: string; network_id: string; label: string | null; view: View; at: unknown; expires_at: unknown;
  created_by: string; created_at: unknown; revoked_at: unknown; last_used_at: unknown; expired: boolean;
}

/** A link found by its token and usable now. */
export interface ShareAccess {
  id: string; organizationId: string; networkId: string; networkName: string; label: string | null; view: View; at: string | null; expiresAt: string;
  lastUsedAt: string | null;
}

const COLUMNS = `id, organization_id, network_id, label, view, at, expires_at, created_by, created_at, revoked_at, last_used_at, expires_at <= now() as expired`;

function view(r: ShareLinkRow) {
  return {
    id: r.id, organization_id: r.organization_id, network_id: r.network_id, label: r.label, view: r.view, at: isoTimestamp(r.at),
    expires_at: isoTimestamp(r.expires_at), status: r.revoked_at ? 'revoked' : r.expired ? 'expired' : 'active',
    created_by: r.created_by, created_at: isoTimestamp(r.created_at), revoked_at: isoTimestamp(r.revoked_at), last_used_at: isoTimestamp(r.last_used_at),
  };
}

/**
 * What makes a link open, besides its token: not revoked, not expired, its network still there, and
 * its creator still an Owner or Admin of the organization (a link is as good as its creator's right
 * to make it: removing or demoting them closes their links).
 */
const usable = (organization: string) => `s.revoked_at is null and s.expires_at > now()
  and exists (select 1 from networks n where n.organization_id = ${organization} and n.id = s.network_id)
  and exists (select 1 from users u where u.id = s.created_by and u.organization_id = ${organization} and u.permissions in ('Owner', 'Admin'))`;

/** The scope a reader of the link acts with: that one network, reading. */
export function shareScope(link: Pick<ShareAccess, 'organizationId' | 'networkId'>): Scope {
  return { kind: 'share_link', organizationId: link.organizationId, userId: '', role: 'Viewer', networkIds: new Set([link.networkId]), allNetworks: false, keyLimitedToNetworks: true };
}

/** last_used_at is written at most once a minute per link, so a polled map does not write on every read. */
const TOUCH_EVERY_MS = 60_000;

export const shareLinkService = {
  async create(db: Db, scope: Scope, networkId: string, input: ShareLinkInput) {
    await networkService.assertFilterable(db, scope, networkId);
    const expires = Date.parse(input.expires_at);
    if (expires <= Date.now()) throw new AppError('validation_failed', { field: 'expires_at', reason: 'must be in the future' });
    if (expires > Date.now() + MAX_SHARE_DAYS * 86_400_000) throw new AppError('validation_failed', { field: 'expires_at', reason: `must be at most ${MAX_SHARE_DAYS} days ahead` });
    if (input.at) {
      const existed = await db.one(`select 1 from networks_history where organization_id = ? and id = ? and tstzrange(valid_from, valid_to) @> ?::timestamptz limit 1`, [scope.organizationId, networkId, input.at]);
      if (!existed) throw new AppError('validation_failed', { field: 'at', reason: 'the network did not exist at that instant' });
    }
    const token = SHARE_TOKEN_PREFIX + randomBase62(32);
    const row = await db.one<ShareLinkRow>(
      `insert into share_links (id, organization_id, network_id, token_hash, label, view, at, expires_at, created_by)
       values (?, ?, ?, ?, ?, ?, ?::timestamptz, ?::timestamptz, ?) returning ${COLUMNS}`,
      [randomUUID(), scope.organizationId, networkId, sha256Hex(token), input.label, input.view, input.at, input.expires_at, scope.userId],
    );
    return { share_link: view(row!), token };
  },

  /** The network's links, newest first: the usable ones, or every one with `includeInactive`. Never a token. */
  async list(db: Db, scope: Scope, networkId: string, includeInactive: boolean) {
    await networkService.assertFilterable(db, scope, networkId);
    const rows = await db.query<ShareLinkRow>(
      `select ${COLUMNS} from share_links where organization_id = ? and network_id = ? ${includeInactive ? '' : 'and revoked_at is null and expires_at > now()'}
       order by created_at desc, id desc limit 1000`,
      [scope.organizationId, networkId],
    );
    return rows.map(view);
  },

  /** Revoked from now on (a second revoke changes nothing). Another network's or organization's link is 404. */
  async revoke(db: Db, scope: Scope, networkId: string, linkId: string) {
    await networkService.assertFilterable(db, scope, networkId);
    const row = await db.one<ShareLinkRow>(
      `update share_links set revoked_at = coalesce(revoked_at, now()) where organization_id = ? and network_id = ? and id = ? returning ${COLUMNS}`,
      [scope.organizationId, networkId, linkId],
    );
    if (!row) throw notFound('ShareLink', linkId);
    return view(row);
  },

  /** The usable link of a token, else 404 whatever the reason. */
  async resolve(db: Db, token: string): Promise<ShareAccess> {
    const row = SHARE_TOKEN.test(token) ? await db.one<ShareLinkRow & { network_name: string }>(
      // Across organizations: the token names no organization; (token_hash, organization_id) is unique, so one row at most.
      `${ACROSS_ORGANIZATIONS} select s.id, s.organization_id, s.network_id, s.label, s.view, s.at, s.expires_at, s.last_used_at,
              (select n.name from networks n where n.organization_id = s.organization_id and n.id = s.network_id) as network_name
       from share_links s where s.token_hash = ? and ${usable('s.organization_id')}`,
      [sha256Hex(token)],
    ) : undefined;
    if (!row) throw notFound('ShareLink', 'shared');
    return {
      id: row.id, organizationId: row.organization_id, networkId: row.network_id, networkName: row.network_name, label: row.label,
      view: row.view, at: isoTimestamp(row.at), expiresAt: isoTimestamp(row.expires_at)!, lastUsedAt: isoTimestamp(row.last_used_at),
    };
  },

  /** Whether a link found earlier still opens (an open stream asks every second). */
  async usable(db: Db, link: Pick<ShareAccess, 'id' | 'organizationId'>): Promise<boolean> {
    const org = link.organizationId;
    return !!(await db.one(`select 1 from share_links s where s.organization_id = ? and s.id = ? and ${usable('?')}`, [org, link.id, org, org]));
  },

  async touch(db: Db, link: ShareAccess): Promise<void> {
    if (link.lastUsedAt && Date.now() - Date.parse(link.lastUsedAt) < TOUCH_EVERY_MS) return;
    await db.query(`update share_links set last_used_at = now() where organization_id = ? and id = ?`, [link.organizationId, link.id]);
  },
};
