// User API keys (decisions §2): `scp_u_` + 32 base62, stored as SHA-256 hex, shown once.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Db } from '../../core/db.js';
import { AppError, notFound } from '../../core/errors.js';
import { randomBase62, sha256Hex } from '../../core/secrets.js';
import { ROLE_RANK, type Scope } from '../../core/scope.js';
import { networkService } from '../networks/service.js';
import { Page } from '../../http/envelope.js';
import { UserApiKey, type Role } from '../accounts/entities.js';

export const API_KEY_PREFIX = 'scp_u_';

export interface ApiKeyInput {
  name?: string;
  permissions?: Role;
  network_ids?: string[] | null;
  expires_at?: string | null;
  is_enabled?: boolean;
}

const em = (db: Db) => db.em as EntityManager;
const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

export function apiKeyView(k: UserApiKey) {
  return {
    id: k.id, name: k.name, user_id: k.userId, organization_id: k.organizationId, permissions: k.permissions,
    network_ids: k.networkIds ?? null, expires_at: iso(k.expiresAt), is_enabled: k.isEnabled, last_used_at: iso(k.lastUsedAt),
    created_at: iso(k.createdAt), updated_at: iso(k.updatedAt),
  };
}

/** A key never exceeds its creator: role at most theirs, networks among those they see. */
async function assertWithinCreator(db: Db, scope: Scope, input: ApiKeyInput): Promise<void> {
  if (input.permissions && ROLE_RANK[input.permissions] > ROLE_RANK[scope.role]) {
    throw new AppError('auth_permission_denied', { required: input.permissions });
  }
  await networkService.assertReferenced(db, scope, input.network_ids ?? [], 'network_ids');
  if (input.expires_at && Date.parse(input.expires_at) <= Date.now()) {
    throw new AppError('validation_failed', { field: 'expires_at', reason: 'must be in the future' });
  }
}

const newKey = () => API_KEY_PREFIX + randomBase62(32);

export const apiKeyService = {
  async create(db: Db, scope: Scope, input: ApiKeyInput) {
    await assertWithinCreator(db, scope, input);
    const key = newKey();
    const apiKey = em(db).create(UserApiKey, {
      id: randomUUID(), organizationId: scope.organizationId, userId: scope.userId, name: input.name!, keyHash: sha256Hex(key),
      permissions: input.permissions ?? scope.role, networkIds: input.network_ids ?? null,
      expiresAt: input.expires_at ? new Date(input.expires_at) : null, isEnabled: input.is_enabled ?? true, lastUsedAt: null,
    });
    await em(db).flush();
    return { api_key: apiKeyView(apiKey), key };
  },

  async list(db: Db, scope: Scope, q: { limit: number; offset: number; ids?: string[] }) {
    const [keys, total] = await em(db).findAndCount(
      UserApiKey, { userId: scope.userId, ...(q.ids ? { id: { $in: q.ids } } : {}) }, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: q.limit || undefined, offset: q.offset },
    );
    return Page.of(keys.map(apiKeyView), total, q.limit, q.offset);
  },

  /** Keys are the user's own: another user's key is as unknown as a missing one. */
  async find(db: Db, scope: Scope, id: string): Promise<UserApiKey> {
    const key = await em(db).findOne(UserApiKey, { id, userId: scope.userId });
    if (!key) throw notFound('User API Key', id);
    return key;
  },

  async get(db: Db, scope: Scope, id: string) {
    return apiKeyView(await this.find(db, scope, id));
  },

  /** Fields left out keep their value; `null` clears network_ids (all networks) and expires_at (never). */
  async update(db: Db, scope: Scope, id: string, input: ApiKeyInput) {
    const key = await this.find(db, scope, id);
    await assertWithinCreator(db, scope, input);
    if (input.name !== undefined) key.name = input.name;
    if (input.permissions !== undefined) key.permissions = input.permissions;
    if (input.network_ids !== undefined) key.networkIds = input.network_ids;
    if (input.expires_at !== undefined) key.expiresAt = input.expires_at ? new Date(input.expires_at) : null;
    if (input.is_enabled !== undefined) key.isEnabled = input.is_enabled;
    await em(db).flush();
    return apiKeyView(key);
  },

  async rotate(db: Db, scope: Scope, id: string) {
    const apiKey = await this.find(db, scope, id);
    const key = newKey();
    apiKey.keyHash = sha256Hex(key);
    await em(db).flush();
    return { api_key: apiKeyView(apiKey), key };
  },

  async remove(db: Db, scope: Scope, id: string) {
    await em(db).remove(await this.find(db, scope, id)).flush();
  },
};
