// Services of hosts (spec §2.5) with their bindings: `source` is Manual on create and never changed
// by an update; tags must be the organization's; bindings follow ../bindings/rules.ts.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import type { Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { assertBindingRules, type BindingFacts } from '../bindings/rules.js';
import { assertBindingTargets, hostBindings } from '../bindings/service.js';
import { bindingTable, withBindings } from '../bindings/table.js';
import { withIds, type BindingInput } from '../hosts/hostSync.js';
import { assertSameParent, compactPositions, lockHost, placeAt, referencedHost, TIME_ORDER } from '../hosts/children.js';
import { listNetworkScoped } from '../networks/scopedList.js';
import { tagService } from '../tags/service.js';
import { serviceTable } from './table.js';

export interface ServiceWrite {
  id?: string; host_id?: string; name: string; service_definition: string; position?: number; tags: string[];
  virtualization: object | null; bindings?: BindingInput[] | null; expected_updated_at?: string | null;
}

const MANUAL = { type: 'Manual' };
const ORDER = { name: 'name', service_definition: 'service_definition', position: 'position', ...TIME_ORDER };

/**
 * Makes the bindings of service `serviceId` (on `hostId`) exactly `input`: identical ones collapse;
 * a listed id of one of this service's bindings updates it, any other listed id or none is a new
 * binding with a server-assigned id (so an id taken elsewhere, in another organization too, is
 * neither honoured nor revealed); targets must be this host's and the rules hold with the host's
 * other services.
 */
async function syncBindings(db: Db, service: { id: string; organization_id: string; network_id: string }, hostId: string, input: BindingInput[]): Promise<void> {
  const unique = new Map<string, BindingInput>();
  for (const b of input) unique.set(`${b.type}|${b.type === 'Port' ? b.port_id : null}|${b.ip_address_id}`, b);
  const own = new Set((await db.query<{ id: string }>(`select id from bindings where organization_id = ? and service_id = ?`, [service.organization_id, service.id])).map((r) => r.id));
  const planned: BindingFacts[] = withIds([...unique.values()], 'bindings').map((b) => ({
    id: own.has(b.id) ? b.id : randomUUID(), service_id: service.id, type: b.type, port_id: b.type === 'Port' ? b.port_id : null, ip_address_id: b.ip_address_id,
  }));
  await assertBindingTargets(db, service.organization_id, hostId, planned, 'bindings.');
  const others = (await hostBindings(db, service.organization_id, hostId)).filter((b) => b.service_id !== service.id);
  assertBindingRules([...others, ...planned], new Set(planned.map((b) => b.id)), 'bindings');
  await bindingTable.syncChildren(
    db, { column: 'service_id', ids: [service.id], organizationId: service.organization_id },
    planned.map((b) => ({ ...b, organization_id: service.organization_id, network_id: service.network_id })),
    ['type', 'port_id', 'ip_address_id'], 'bindings.id',
  );
}

export const serviceService = {
  list: (db: Db, scope: Scope, q: Record<string, any>) =>
    listNetworkScoped(serviceTable, db, scope, q, { filters: ['host_id', 'service_definition'], order: ORDER, present: (d, s, rows, at) => withBindings(d, s.organizationId, rows, at) }),

  async get(db: Db, scope: Scope, id: string, at?: string) {
    return (await withBindings(db, scope.organizationId, [await serviceTable.get(db, scope, id, at)], at))[0]!;
  },

  async create(db: Db, scope: Scope, input: ServiceWrite) {
    return db.transaction(async (tx) => {
      const host = await referencedHost(tx, scope, input.host_id!);
      await tagService.assertTagsExist(tx, scope, input.tags);
      const id = randomUUID(); // a body id is ignored
      const position = await placeAt(tx, 'services', { column: 'host_id', id: host.id, organizationId: scope.organizationId }, id, input.position);
      const service = await serviceTable.insert(tx, {
        id, organization_id: host.organization_id, network_id: host.network_id, host_id: host.id, name: input.name,
        service_definition: input.service_definition, position, tags: input.tags, virtualization: input.virtualization, source: MANUAL,
      });
      await syncBindings(tx, { id, organization_id: host.organization_id, network_id: host.network_id }, host.id, input.bindings ?? []);
      return (await withBindings(tx, scope.organizationId, [service]))[0]!;
    });
  },

  async update(db: Db, scope: Scope, id: string, input: ServiceWrite) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      const current = await serviceTable.get(tx, scope, id);
      assertSameParent('host_id', current.host_id, input.host_id, 'A service');
      const hostId = current.host_id as string;
      await lockHost(tx, scope.organizationId, hostId);
      await tagService.assertTagsExist(tx, scope, input.tags);
      const position = await placeAt(tx, 'services', { column: 'host_id', id: hostId, organizationId: scope.organizationId }, id, input.position);
      const service = await serviceTable.update(tx, scope, id, {
        name: input.name, service_definition: input.service_definition, position, tags: input.tags, virtualization: input.virtualization,
      }, input.expected_updated_at);
      if (input.bindings) {
        await syncBindings(tx, { id, organization_id: current.organization_id as string, network_id: current.network_id as string }, hostId, input.bindings);
      }
      return (await withBindings(tx, scope.organizationId, [service]))[0]!;
    });
  },

  /** Its bindings go with it; it and they leave every dependency (trigger). */
  async remove(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      const current = await serviceTable.get(tx, scope, id);
      await lockHost(tx, scope.organizationId, current.host_id as string);
      await serviceTable.remove(tx, scope, id);
      await compactPositions(tx, 'services', { column: 'host_id', id: current.host_id as string, organizationId: scope.organizationId });
    });
  },

  /** Every state of the service row, newest first (its bindings as of any instant: GET with `at`). */
  history: (db: Db, scope: Scope, id: string) => serviceTable.history(db, scope, id),
};
