// Register, login, logout, the current user; users of an organization; the organization itself.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Db } from '../../core/db.js';
import { AppError, notFound } from '../../core/errors.js';
import { DUMMY_PASSWORD_HASH, hashPassword, randomBase62, sha256Hex, verifyPassword } from '../../core/secrets.js';
import { ROLE_RANK, type Scope } from '../../core/scope.js';
import { isOperator } from '../../core/operators.js';
import type { Services } from '../../services.js';
import { Page } from '../../http/envelope.js';
import { networkService } from '../networks/service.js';
import { Organization, Session, User, type Role } from './entities.js';
import { SESSION_TTL_MS, USER_NETWORKS } from '../../core/principal.js';

export interface UserView {
  id: string; email: string; organization_id: string; permissions: Role; network_ids: string[];
  created_at: string; updated_at: string;
}

/** The users as answered, with the networks each sees (one query for all of them). */
async function toViews(db: Db, users: User[]): Promise<UserView[]> {
  if (!users.length) return [];
  const rows = await db.query<{ id: string; network_ids: string[] }>(
    `select u.id, ${USER_NETWORKS} as network_ids from users u where u.id = any(?::uuid[])`, [users.map((u) => u.id)],
  );
  const networks = new Map(rows.map((r) => [r.id, r.network_ids]));
  return users.map((user) => ({
    id: user.id, email: user.email, organization_id: user.organizationId, permissions: user.permissions,
    network_ids: networks.get(user.id) ?? [],
    created_at: new Date(user.createdAt).toISOString(), updated_at: new Date(user.updatedAt).toISOString(),
  }));
}

const toView = async (db: Db, user: User): Promise<UserView> => (await toViews(db, [user]))[0]!;

const em = (db: Db) => db.em as EntityManager;

async function assertEmailFree(db: Db, email: string): Promise<void> {
  if (await em(db).findOne(User, { email: email.toLowerCase() })) throw new AppError('entity_already_exists', { entity: 'User', field: 'email', value: email });
}

/** An admin may only hand out roles up to their own, and only the Owner touches an Owner. */
function assertMayAssign(scope: Scope, role: Role): void {
  if (ROLE_RANK[role] > ROLE_RANK[scope.role]) throw new AppError('auth_permission_denied', { required: role });
}

export const accountService = {
  async register(db: Db, services: Services, input: { email: string; password: string; organization_name: string }) {
    const passwordHash = await hashPassword(input.password);
    return db.transaction(async (tx) => {
      await assertEmailFree(tx, input.email);
      const org = em(tx).create(Organization, { id: randomUUID(), name: input.organization_name, apiAccessEnabled: true });
      await em(tx).flush(); // ids are plain columns, not relations: the ORM cannot order these inserts itself
      const user = em(tx).create(User, {
        id: randomUUID(), organizationId: org.id, email: input.email.toLowerCase(), passwordHash, permissions: 'Owner',
      });
      await em(tx).flush();
      if (services.config.createDefaultNetwork) {
        const ownerScope: Scope = { kind: 'session', organizationId: org.id, userId: user.id, role: 'Owner', networkIds: new Set(), allNetworks: true };
        await networkService.create(tx, ownerScope, { name: 'Default', description: null, tags: [] });
      }
      return toView(tx, user);
    });
  },

  /** Checks the password (throttled per account and client address) and opens a session; returns the user and the new session id. */
  async login(db: Db, services: Services, input: { email: string; password: string }, address: string) {
    await services.loginGuard.beginAttempt(input.email, address);
    const user = await em(db).findOne(User, { email: input.email.toLowerCase() });
    // Unknown emails cost the same time as wrong passwords, so timing does not reveal accounts.
    const ok = await verifyPassword(input.password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
    if (!user || !ok) throw new AppError('auth_invalid_credentials');
    await services.loginGuard.succeeded(input.email, address);
    const sessionId = randomBase62(43); // a fresh id at every login (session fixation)
    em(db).create(Session, { idHash: sha256Hex(sessionId), userId: user.id, expiresAt: new Date(Date.now() + SESSION_TTL_MS) });
    await em(db).flush();
    return { user: await toView(db, user), sessionId };
  },

  /** Deletes the session; answers whether there was one (its event streams are then ended). */
  async logout(db: Db, sessionId: string | undefined): Promise<boolean> {
    if (!sessionId) return false;
    return (await db.query(`delete from sessions where id_hash = ? returning 1`, [sha256Hex(sessionId)])).length > 0;
  },

  /** The signed-in user, and whether the queue dashboard is theirs to open (the web app links it then). */
  async me(db: Db, scope: Scope, config: Services['config']): Promise<UserView & { operator: boolean }> {
    const user = await em(db).findOne(User, { id: scope.userId });
    if (!user) throw new AppError('auth_not_authenticated');
    return { ...(await toView(db, user)), operator: await isOperator(db, config, scope) };
  },

  // ---- Users of the organization (Admin) ----
  async listUsers(db: Db, scope: Scope, q: { limit: number; offset: number; ids?: string[] }) {
    const [users, total] = await em(db).findAndCount(
      User,
      { organizationId: scope.organizationId, ...(q.ids ? { id: { $in: q.ids } } : {}) },
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: q.limit || undefined, offset: q.offset },
    );
    return Page.of(await toViews(db, users), total, q.limit, q.offset);
  },

  async findUser(db: Db, scope: Scope, id: string): Promise<User> {
    const user = await em(db).findOne(User, { id, organizationId: scope.organizationId });
    if (!user) throw notFound('User', id);
    return user;
  },

  async getUser(db: Db, scope: Scope, id: string) {
    return toView(db, await this.findUser(db, scope, id));
  },

  async createUser(db: Db, scope: Scope, input: { email: string; password: string; permissions: Role; network_ids: string[] }) {
    assertMayAssign(scope, input.permissions);
    const passwordHash = await hashPassword(input.password);
    return db.transaction(async (tx) => {
      await assertEmailFree(tx, input.email);
      await networkService.assertReferenced(tx, scope, input.network_ids, 'network_ids');
      const user = em(tx).create(User, {
        id: randomUUID(), organizationId: scope.organizationId, email: input.email.toLowerCase(), passwordHash, permissions: input.permissions,
      });
      await em(tx).flush();
      await this.grantNetworks(tx, scope.organizationId, user.id, input.network_ids);
      return toView(tx, user);
    });
  },

  async updateUser(db: Db, scope: Scope, id: string, input: { permissions: Role; network_ids: string[] }) {
    return db.transaction(async (tx) => {
      const user = await this.findUser(tx, scope, id);
      assertMayAssign(scope, user.permissions);
      assertMayAssign(scope, input.permissions);
      await networkService.assertReferenced(tx, scope, input.network_ids, 'network_ids');
      if (user.permissions === 'Owner' && input.permissions !== 'Owner') await this.assertAnotherOwner(tx, scope, user.id);
      user.permissions = input.permissions;
      await em(tx).flush();
      await this.grantNetworks(tx, scope.organizationId, user.id, input.network_ids);
      return toView(tx, user);
    });
  },

  async removeUser(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      const user = await this.findUser(tx, scope, id);
      assertMayAssign(scope, user.permissions);
      if (user.permissions === 'Owner') await this.assertAnotherOwner(tx, scope, user.id);
      await em(tx).remove(user).flush();
    });
  },

  /** The user's networks become `networkIds` (checked to be the organization's by the caller). */
  async grantNetworks(db: Db, organizationId: string, userId: string, networkIds: string[]) {
    await db.query(`delete from user_network_access where organization_id = ? and user_id = ?`, [organizationId, userId]);
    if (networkIds.length) {
      // organization_id given, not filled by the table's trigger: on the partitioned schema it picks the partition.
      await db.query(
        `insert into user_network_access (user_id, network_id, organization_id)
         select ?, n.id, n.organization_id from networks n where n.organization_id = ? and n.id = any(?::uuid[])`,
        [userId, organizationId, networkIds],
      );
    }
  },

  /** An organization never loses its last Owner. */
  async assertAnotherOwner(db: Db, scope: Scope, userId: string) {
    const others = await em(db).count(User, { organizationId: scope.organizationId, permissions: 'Owner', id: { $ne: userId } });
    if (!others) throw new AppError('entity_in_use', { entity: 'User', id: userId, used_by: 'organization (last Owner)' }, 'The last Owner of an organization cannot be removed or demoted');
  },

  // ---- The organization (Owner) ----
  async getOrganization(db: Db, scope: Scope) {
    const org = await em(db).findOneOrFail(Organization, { id: scope.organizationId });
    return orgView(org);
  },

  async updateOrganization(db: Db, scope: Scope, input: { name: string; api_access_enabled: boolean }) {
    const org = await em(db).findOneOrFail(Organization, { id: scope.organizationId });
    org.name = input.name;
    org.apiAccessEnabled = input.api_access_enabled;
    await em(db).flush();
    return orgView(org);
  },
};

function orgView(org: Organization) {
  return {
    id: org.id, name: org.name, api_access_enabled: org.apiAccessEnabled,
    created_at: new Date(org.createdAt).toISOString(), updated_at: new Date(org.updatedAt).toISOString(),
  };
}
