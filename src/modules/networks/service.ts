import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError, invalidReference } from '../../core/errors.js';
import { HistoryTable } from '../../core/historyTable.js';
import { assertNetworksVisible, type Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { assertSameId, orderTerms } from '../../http/schemas.js';
import { tagService } from '../tags/service.js';
import { contentSummary, countContents, restoreNetwork } from './restore.js';

const SINGULAR: Record<string, string> = { hosts: 'host', subnets: 'subnet', dependencies: 'dependency', daemons: 'daemon', daemon_api_keys: 'daemon API key' };

export const networkTable = new HistoryTable({
  table: 'networks',
  entity: 'Network',
  columns: ['id', 'organization_id', 'name', 'description', 'tags', 'host_expiry_days', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
  networkColumn: 'id', // a network is in scope when it is one of the caller's networks
});

export interface NetworkInput {
  id?: string;
  name: string;
  description: string | null;
  tags: string[];
  host_expiry_days?: number;
  expected_updated_at?: string | null;
}

const ORDER_COLUMNS = { name: 'name', created_at: 'created_at', updated_at: 'updated_at' };

export const networkService = {
  async list(db: Db, scope: Scope, q: Record<string, any>) {
    const { rows, total } = await networkTable.list(db, scope, {
      ids: q.ids, order: orderTerms(q, ORDER_COLUMNS, 'created_at'), limit: q.limit, offset: q.offset, at: q.at,
    });
    return Page.of(rows, total, q.limit, q.offset);
  },

  get: (db: Db, scope: Scope, id: string, at?: string) => networkTable.get(db, scope, id, at),

  async create(db: Db, scope: Scope, input: NetworkInput) {
    return db.transaction(async (tx) => {
      await tagService.assertTagsExist(tx, scope, input.tags);
      return networkTable.insert(tx, {
        id: randomUUID(), organization_id: scope.organizationId, name: input.name, description: input.description, tags: input.tags,
        ...(input.host_expiry_days ? { host_expiry_days: input.host_expiry_days } : {}),
      });
    });
  },

  async update(db: Db, scope: Scope, id: string, input: NetworkInput) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      await tagService.assertTagsExist(tx, scope, input.tags);
      const values = { name: input.name, description: input.description, tags: input.tags, ...(input.host_expiry_days ? { host_expiry_days: input.host_expiry_days } : {}) };
      return networkTable.update(tx, scope, id, values, input.expected_updated_at);
    });
  },

  /**
   * A network that still holds anything is refused (409 with the counts), as a subnet in use is,
   * unless `cascade`: then everything on it goes with it (its history stays, see restore).
   */
  async remove(db: Db, scope: Scope, id: string, cascade = false) {
    return db.transaction(async (tx) => {
      await networkTable.get(tx, scope, id, undefined, true);
      if (!cascade) {
        const counts = await countContents(tx, scope.organizationId, id);
        const held = Object.entries(counts).filter(([, n]) => n > 0);
        if (held.length) {
          throw new AppError('network_not_empty', { id, ...counts, contents: held.map(([k, n]) => `${n} ${n === 1 ? SINGULAR[k] : k}`).join(', ') });
        }
      }
      await tx.query(`delete from networks where organization_id = ? and id = ?`, [scope.organizationId, id]);
    });
  },

  async restore(db: Db, scope: Scope, id: string, at: string) {
    const restored = await restoreNetwork(db, scope, id, at);
    return { ...(await networkTable.get(db, scope, id)), restored };
  },

  history: (db: Db, scope: Scope, id: string) => networkTable.history(db, scope, id),

  /** What the network holds now (404 / 403 as reading it). */
  async contents(db: Db, scope: Scope, id: string) {
    await networkTable.get(db, scope, id);
    return contentSummary(db, scope.organizationId, id);
  },

  /**
   * Network ids named in a body (grants, key scopes): unknown or another org's is 400
   * entity_reference_invalid naming the id; in the org but outside the caller's scope, 403.
   */
  async assertReferenced(db: Db, scope: Scope, ids: string[], field: string): Promise<void> {
    if (!ids.length) return;
    const rows = await db.query<{ id: string }>(`select id from networks where organization_id = ? and id = any(?::uuid[])`, [scope.organizationId, ids]);
    const known = new Set(rows.map((r) => r.id));
    const missing = ids.find((id) => !known.has(id));
    if (missing) throw invalidReference('Network', missing, field);
    assertNetworksVisible(scope, ids, known);
  },

  /**
   * A `network_id` in a body (creating a network-level entity): unknown or another org's is 400
   * entity_reference_invalid, outside the caller's scope 403.
   */
  async assertWritable(db: Db, scope: Scope, networkId: string, field = 'network_id'): Promise<void> {
    await this.assertReferenced(db, scope, [networkId], field);
  },

  /**
   * The `network_id` filter of every network-level list (decisions §3): a network of the org in
   * scope narrows the list; outside the scope is 403; unknown or another org's is 404.
   */
  async assertFilterable(db: Db, scope: Scope, networkId: string, at?: string): Promise<void> {
    // As of `at`, a network that has since been deleted still narrows the list: that is how its
    // contents are read back after a deletion.
    const rows = await db.query<{ id: string }>(
      at
        ? `select id from networks_history where organization_id = ? and id = ? and tstzrange(valid_from, valid_to) @> ?::timestamptz`
        : `select id from networks where organization_id = ? and id = ?`,
      at ? [scope.organizationId, networkId, at] : [scope.organizationId, networkId],
    );
    assertNetworksVisible(scope, [networkId], new Set(rows.map((r) => r.id)));
  },
};
