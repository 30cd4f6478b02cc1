// Bindings (spec §2.6): a service bound to a port (on all or one of the host's addresses) or to an
// IP address of its own host, under the rules of ./rules.ts. A deleted binding leaves every
// dependency that lists it (database trigger).
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { invalidReference } from '../../core/errors.js';
import type { Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { assertSameId, orderTerms } from '../../http/schemas.js';
import { assertSameParent, lockHost, referencedService, TIME_ORDER } from '../hosts/children.js';
import { networkService } from '../networks/service.js';
import { assertBindingRules, type BindingFacts } from './rules.js';
import { bindingTable } from './table.js';

export interface BindingWrite {
  id?: string; service_id?: string; type: 'Port' | 'IPAddress'; port_id: string | null; ip_address_id: string | null;
  expected_updated_at?: string | null;
}

/**
 * Bindings point at ports and IP addresses of `hostId` (400 entity_reference_invalid naming the
 * first other one). `prefix` places the field (`''`, `bindings.`, `services.bindings.`);
 * hosts/service.ts `assertBindingTargets` can be this function.
 */
export async function assertBindingTargets(
  db: Db, organizationId: string, hostId: string, bindings: Array<{ port_id: string | null; ip_address_id: string | null }>, prefix = '',
): Promise<void> {
  const portIds = [...new Set(bindings.map((b) => b.port_id).filter((x): x is string => !!x))];
  const ipIds = [...new Set(bindings.map((b) => b.ip_address_id).filter((x): x is string => !!x))];
  const [ports, ips] = await Promise.all([
    portIds.length ? db.query<{ id: string }>(`select id from ports where organization_id = ? and host_id = ? and id = any(?::uuid[])`, [organizationId, hostId, portIds]) : [],
    ipIds.length ? db.query<{ id: string }>(`select id from ip_addresses where organization_id = ? and host_id = ? and id = any(?::uuid[])`, [organizationId, hostId, ipIds]) : [],
  ]);
  const knownPorts = new Set(ports.map((p) => p.id));
  const knownIps = new Set(ips.map((p) => p.id));
  const badPort = portIds.find((id) => !knownPorts.has(id));
  if (badPort) throw invalidReference('Port', badPort, `${prefix}port_id`);
  const badIp = ipIds.find((id) => !knownIps.has(id));
  if (badIp) throw invalidReference('IPAddress', badIp, `${prefix}ip_address_id`);
}

/** Every live binding of the services of one host (the caller holds the host lock). */
export async function hostBindings(db: Db, organizationId: string, hostId: string): Promise<BindingFacts[]> {
  return db.query<BindingFacts>(
    `select b.id, b.service_id, b.type, b.port_id, b.ip_address_id from bindings b join services s on s.organization_id = b.organization_id and s.id = b.service_id
      where b.organization_id = ? and s.organization_id = ? and s.host_id = ?`,
    [organizationId, organizationId, hostId],
  );
}

const facts = (id: string, serviceId: string, b: BindingWrite): BindingFacts => ({
  id, service_id: serviceId, type: b.type, port_id: b.type === 'Port' ? b.port_id : null, ip_address_id: b.ip_address_id,
});

const ORDER = { type: 'type', ...TIME_ORDER };

export const bindingService = {
  /** Filters network_id (decisions §3), service_id, port_id, ip_address_id and host_id (the service's host). */
  async list(db: Db, scope: Scope, q: Record<string, any>) {
    const where: Array<[string, unknown[]]> = [];
    if (q.network_id) {
      await networkService.assertFilterable(db, scope, q.network_id, q.at);
      where.push(['t.network_id = ?', [q.network_id]]);
    }
    for (const f of ['service_id', 'port_id', 'ip_address_id']) if (q[f] !== undefined) where.push([`t.${f} = ?`, [q[f]]]);
    // A service never changes host, so any of its states names it (live or deleted since: `at`).
    if (q.host_id) where.push(['t.service_id in (select h.id from services_history h where h.organization_id = ? and h.host_id = ?)', [scope.organizationId, q.host_id]]);
    const { rows, total } = await bindingTable.list(db, scope, {
      where, ids: q.ids, order: orderTerms(q, ORDER, 'created_at'), limit: q.limit, offset: q.offset, at: q.at,
    });
    return Page.of(rows, total, q.limit, q.offset);
  },

  get: (db: Db, scope: Scope, id: string, at?: string) => bindingTable.get(db, scope, id, at),

  async create(db: Db, scope: Scope, input: BindingWrite) {
    return db.transaction(async (tx) => {
      const service = await referencedService(tx, scope, input.service_id!);
      const id = randomUUID(); // a body id is ignored
      const binding = facts(id, service.id, input);
      await assertBindingTargets(tx, scope.organizationId, service.host_id, [binding]);
      assertBindingRules([...(await hostBindings(tx, scope.organizationId, service.host_id)), binding], new Set([id]), '');
      return bindingTable.insert(tx, {
        id, organization_id: service.organization_id, network_id: service.network_id, service_id: service.id,
        type: binding.type, port_id: binding.port_id, ip_address_id: binding.ip_address_id,
      });
    });
  },

  async update(db: Db, scope: Scope, id: string, input: BindingWrite) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      const current = await bindingTable.get(tx, scope, id);
      assertSameParent('service_id', current.service_id, input.service_id, 'A binding');
      const hostId = (await tx.one<{ host_id: string }>(`select host_id from services where organization_id = ? and id = ?`, [scope.organizationId, current.service_id]))!.host_id;
      await lockHost(tx, scope.organizationId, hostId);
      const binding = facts(id, current.service_id as string, input);
      await assertBindingTargets(tx, scope.organizationId, hostId, [binding]);
      assertBindingRules([...(await hostBindings(tx, scope.organizationId, hostId)).filter((b) => b.id !== id), binding], new Set([id]), '');
      return bindingTable.update(tx, scope, id, {
        type: binding.type, port_id: binding.port_id, ip_address_id: binding.ip_address_id,
      }, input.expected_updated_at);
    });
  },

  remove: (db: Db, scope: Scope, id: string) => db.transaction((tx) => bindingTable.remove(tx, scope, id)),

  history: (db: Db, scope: Scope, id: string) => bindingTable.history(db, scope, id),
};
