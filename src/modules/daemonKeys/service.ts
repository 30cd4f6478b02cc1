// Daemon API keys (reference §14, decisions §2): `scp_d_` + 32 base62, one network each, stored as
// SHA-256 hex and shown once (at creation and rotation). `server_key` keeps the key itself, sealed
// (core/secretBox.ts), only for keys made by provisioning a server_poll daemon: the server presents it
// when it calls the daemon.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError, accessDenied, notFound } from '../../core/errors.js';
import { isoTimestamp } from '../../core/historyTable.js';
import { DAEMON_SERVER_KEY, seal } from '../../core/secretBox.js';
import { randomBase62, sha256Hex } from '../../core/secrets.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { networkService } from '../networks/service.js';

export const DAEMON_KEY_PREFIX = 'scp_d_';

export interface DaemonKeyInput {
  name?: string;
  network_id?: string;
  expires_at?: string | null;
  is_enabled?: boolean;
}

interface KeyRow {
  id: string; organization_id: string; network_id: string; user_id: string | null; name: string; is_enabled: boolean;
  expires_at: unknown; last_used_at: unknown; created_at: unknown; updated_at: unknown;
}

const COLUMNS = 'id, organization_id, network_id, user_id, name, is_enabled, expires_at, last_used_at, created_at, updated_at';

export function daemonKeyView(k: KeyRow) {
  return {
    id: k.id, organization_id: k.organization_id, network_id: k.network_id, user_id: k.user_id, name: k.name, is_enabled: k.is_enabled,
    expires_at: isoTimestamp(k.expires_at), last_used_at: isoTimestamp(k.last_used_at),
    created_at: isoTimestamp(k.created_at), updated_at: isoTimestamp(k.updated_at),
  };
}

const newKey = () => DAEMON_KEY_PREFIX + randomBase62(32);

function assertFutureExpiry(expiresAt: string | null | undefined): void {
  if (expiresAt && Date.parse(expiresAt) <= Date.now()) {
    throw new AppError('validation_failed', { field: 'expires_at', reason: 'must be in the future' });
  }
}

/**
 * Makes a key (the caller checked the network). `serverKey` keeps the key sealed too: only for the
 * key of a provisioned server_poll daemon.
 */
export async function insertDaemonKey(
  db: Db,
  k: { organizationId: string; networkId: string; userId: string | null; name: string; expiresAt?: string | null; isEnabled?: boolean; serverKey?: boolean },
) {
  const key = newKey();
  const row = await db.one<KeyRow>(
    `insert into daemon_api_keys (id, organization_id, network_id, user_id, name, key_hash, server_key, is_enabled, expires_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?) returning ${COLUMNS}`,
    [randomUUID(), k.organizationId, k.networkId, k.userId || null, k.name, sha256Hex(key), k.serverKey ? seal(key, DAEMON_SERVER_KEY) : null, k.isEnabled ?? true, k.expiresAt ?? null],
  );
  return { api_key: daemonKeyView(row!), key };
}

export const daemonKeyService = {
  async create(db: Db, scope: Scope, input: DaemonKeyInput) {
    await networkService.assertWritable(db, scope, input.network_id!);
    assertFutureExpiry(input.expires_at);
    return insertDaemonKey(db, {
      organizationId: scope.organizationId, networkId: input.network_id!, userId: scope.userId, name: input.name!,
      expiresAt: input.expires_at, isEnabled: input.is_enabled,
    });
  },

  async list(db: Db, scope: Scope, q: { limit: number; offset: number; network_id?: string; ids?: string[] }) {
    const where = ['organization_id = ?'];
    const params: unknown[] = [scope.organizationId];
    if (q.ids) {
      where.push('id = any(?::uuid[])');
      params.push(q.ids);
    }
    if (!scope.allNetworks) {
      where.push('network_id = any(?::uuid[])');
      params.push([...scope.networkIds]);
    }
    if (q.network_id) {
      await networkService.assertFilterable(db, scope, q.network_id);
      where.push('network_id = ?');
      params.push(q.network_id);
    }
    const page = q.limit > 0 ? ` limit ${q.limit}` : '';
    const rows = await db.query<KeyRow & { total: string }>(
      `select ${COLUMNS}, count(*) over () as total from daemon_api_keys where ${where.join(' and ')}
       order by created_at, id${page} offset ${q.offset}`,
      params,
    );
    const total = rows.length
      ? Number(rows[0]!.total)
      : Number((await db.one<{ n: string }>(`select count(*) as n from daemon_api_keys where ${where.join(' and ')}`, params))!.n);
    return Page.of(rows.map(daemonKeyView), total, q.limit, q.offset);
  },

  /** Another organization's key is as unknown as a missing one; a network outside the scope is 403. */
  async find(db: Db, scope: Scope, id: string, lock = false): Promise<KeyRow> {
    const row = await db.one<KeyRow>(`select ${COLUMNS} from daemon_api_keys where id = ?${lock ? ' for update' : ''}`, [id]);
    if (!row || row.organization_id !== scope.organizationId) throw notFound('Daemon API Key', id);
    if (!canSeeNetwork(scope, row.network_id)) throw accessDenied('Daemon API Key', id);
    return row;
  },

  async get(db: Db, scope: Scope, id: string) {
    return daemonKeyView(await this.find(db, scope, id));
  },

  /** Fields left out keep their value; `expires_at: null` means never. */
  async update(db: Db, scope: Scope, id: string, input: DaemonKeyInput) {
    return db.transaction(async (tx) => {
      const current = await this.find(tx, scope, id, true);
      assertFutureExpiry(input.expires_at);
      const row = await tx.one<KeyRow>(
        `update daemon_api_keys set name = ?, expires_at = ?, is_enabled = ?, updated_at = now() where id = ? returning ${COLUMNS}`,
        [
          input.name ?? current.name,
          input.expires_at !== undefined ? input.expires_at : current.expires_at,
          input.is_enabled ?? current.is_enabled,
          id,
        ],
      );
      return daemonKeyView(row!);
    });
  },

  /** A new secret, shown once; a provisioned key's server copy follows it. */
  async rotate(db: Db, scope: Scope, id: string) {
    return db.transaction(async (tx) => {
      await this.find(tx, scope, id, true);
      const key = newKey();
      const row = await tx.one<KeyRow>(
        `update daemon_api_keys set key_hash = ?, server_key = case when server_key is null then null else ? end, updated_at = now()
         where id = ? returning ${COLUMNS}`,
        [sha256Hex(key), seal(key, DAEMON_SERVER_KEY), id],
      );
      return { api_key: daemonKeyView(row!), key };
    });
  },

  async remove(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      await this.find(tx, scope, id, true);
      await tx.query(`delete from daemon_api_keys where id = ?`, [id]);
    });
  },
};
