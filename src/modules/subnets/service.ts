import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError } from '../../core/errors.js';
import type { Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { assertSameId, assertSameNetwork } from '../../http/schemas.js';
import { subnetToDaemon } from '../discovery/vocabulary.js';
import { listNetworkScoped } from '../networks/scopedList.js';
import { networkService } from '../networks/service.js';
import { tagService } from '../tags/service.js';
import { subnetTable } from './table.js';

export interface SubnetInput {
  id?: string; cidr: string; name: string; description: string | null; subnet_type: string; tags: string[];
  network_id?: string; expected_updated_at?: string | null;
}

export const subnetService = {
  list: (db: Db, scope: Scope, q: Record<string, any>) =>
    listNetworkScoped(subnetTable, db, scope, q, { order: { name: 'name', cidr: 'cidr', created_at: 'created_at', updated_at: 'updated_at' } }),

  get: (db: Db, scope: Scope, id: string, at?: string) => subnetTable.get(db, scope, id, at),

  /** Every subnet of a daemon's network, in the daemon's shape, as one page. */
  async listForDaemon(db: Db, scope: Scope) {
    const { rows, total } = await subnetTable.list(db, scope, { order: [{ column: 'created_at', direction: 'asc' }], limit: 0, offset: 0 });
    return Page.of(rows.map(subnetToDaemon), total, 0, 0);
  },

  async create(db: Db, scope: Scope, input: SubnetInput) {
    return db.transaction(async (tx) => {
      await networkService.assertWritable(tx, scope, input.network_id!);
      await tagService.assertTagsExist(tx, scope, input.tags);
      const subnet = await subnetTable.insert(tx, {
        id: randomUUID(), organization_id: scope.organizationId, network_id: input.network_id, cidr: input.cidr,
        name: input.name, description: input.description, subnet_type: input.subnet_type, tags: input.tags, source: { type: 'Manual' },
      });
      return withOverlapWarnings(tx, subnet);
    });
  },

  async update(db: Db, scope: Scope, id: string, input: SubnetInput) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      await tagService.assertTagsExist(tx, scope, input.tags);
      const current = await subnetTable.get(tx, scope, id, undefined, true);
      assertSameNetwork(current.network_id, input.network_id, 'a subnet');
      if (current.cidr !== input.cidr) await assertNoAddressOutside(tx, scope.organizationId, id, input.cidr);
      const subnet = await subnetTable.update(tx, scope, id, {
        cidr: input.cidr, name: input.name, description: input.description, subnet_type: input.subnet_type, tags: input.tags,
      }, input.expected_updated_at);
      return withOverlapWarnings(tx, subnet);
    });
  },

  /** A subnet that IP addresses still use is not deleted (their hosts would silently lose them). */
  async remove(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      await subnetTable.get(tx, scope, id, undefined, true);
      const used = await tx.one<{ n: string }>(`select count(*) as n from ip_addresses where organization_id = ? and subnet_id = ?`, [scope.organizationId, id]);
      if (Number(used!.n) > 0) throw new AppError('entity_in_use', { entity: 'Subnet', id, used_by: `${used!.n} IP address(es)` });
      await subnetTable.remove(tx, scope, id);
    });
  },

  history: (db: Db, scope: Scope, id: string) => subnetTable.history(db, scope, id),
};

/** Narrowing a subnet must keep every address of it inside. */
async function assertNoAddressOutside(db: Db, organizationId: string, subnetId: string, cidr: string): Promise<void> {
  const outside = await db.one<{ ip_address: string }>(
    `select ip_address::text from ip_addresses where organization_id = ? and subnet_id = ? and not (ip_address <<= ?::cidr) limit 1`,
    [organizationId, subnetId, cidr],
  );
  if (outside) throw new AppError('ip_address_out_of_range', { ip: outside.ip_address, subnet: cidr });
}

export interface SubnetWarning { code: 'subnet_overlap'; subnet_id: string; cidr: string }

/**
 * Subnets of one network that overlap are reported, not refused: a /24 inside a /16 is a real
 * layout (a VLAN carved out of a site range), but two of them by mistake should be seen. The answer
 * to a create or update carries `warnings: [{ code: 'subnet_overlap', subnet_id, cidr }]` (absent when none).
 */
async function withOverlapWarnings<T extends Record<string, unknown>>(db: Db, subnet: T): Promise<T & { warnings?: SubnetWarning[] }> {
  const overlapping = await db.query<{ id: string; cidr: string }>(
    `select id, cidr::text as cidr from subnets where organization_id = ? and network_id = ? and id <> ? and cidr && ?::cidr order by cidr, id`,
    [subnet.organization_id, subnet.network_id, subnet.id, subnet.cidr],
  );
  // Only when there is one, so an answer without overlaps is the subnet as a GET reads it.
  if (!overlapping.length) return subnet;
  return { ...subnet, warnings: overlapping.map((o) => ({ code: 'subnet_overlap' as const, subnet_id: o.id, cidr: o.cidr })) };
}
