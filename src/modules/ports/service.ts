// Ports of hosts (spec §2.4): (number, protocol) unique per host, `type` derived from them.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { alreadyExists } from '../../core/errors.js';
import type { Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { assertSameParent, lockHost, referencedHost, TIME_ORDER } from '../hosts/children.js';
import { listNetworkScoped } from '../networks/scopedList.js';
import { portType, type Protocol } from './portTypes.js';
import { portTable } from './table.js';

export interface PortWrite {
  id?: string; host_id?: string; number: number; protocol: Protocol; expected_updated_at?: string | null;
}

/**
 * A clear 409 before the write; the deferred constraint `ports_host_number_protocol_uq` (mapped in
 * src/core/errors.ts) still catches a race at commit. Callers hold the host lock.
 */
async function assertPortFree(db: Db, organizationId: string, hostId: string, id: string, number: number, protocol: Protocol): Promise<void> {
  const taken = await db.one(`select id from ports where organization_id = ? and host_id = ? and number = ? and protocol = ? and id <> ?`, [organizationId, hostId, number, protocol, id]);
  if (taken) throw alreadyExists('Port', 'number/protocol', `${number}/${protocol}`);
}

const ORDER = { number: 'number', protocol: 'protocol', type: 'type', ...TIME_ORDER };

export const portService = {
  list: (db: Db, scope: Scope, q: Record<string, any>) =>
    listNetworkScoped(portTable, db, scope, q, { filters: ['host_id', 'number', 'protocol'], order: ORDER }),

  get: (db: Db, scope: Scope, id: string, at?: string) => portTable.get(db, scope, id, at),

  async create(db: Db, scope: Scope, input: PortWrite) {
    return db.transaction(async (tx) => {
      const host = await referencedHost(tx, scope, input.host_id!);
      const id = randomUUID(); // a body id is ignored
      await assertPortFree(tx, scope.organizationId, host.id, id, input.number, input.protocol);
      return portTable.insert(tx, {
        id, organization_id: host.organization_id, network_id: host.network_id, host_id: host.id,
        number: input.number, protocol: input.protocol, type: portType(input.number, input.protocol),
      });
    });
  },

  async update(db: Db, scope: Scope, id: string, input: PortWrite) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      const current = await portTable.get(tx, scope, id);
      assertSameParent('host_id', current.host_id, input.host_id, 'A port');
      await lockHost(tx, scope.organizationId, current.host_id as string);
      await assertPortFree(tx, scope.organizationId, current.host_id as string, id, input.number, input.protocol);
      return portTable.update(tx, scope, id, {
        number: input.number, protocol: input.protocol, type: portType(input.number, input.protocol),
      }, input.expected_updated_at);
    });
  },

  /** Its bindings go with it (ON DELETE CASCADE) and leave every dependency (trigger). */
  async remove(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      const current = await portTable.get(tx, scope, id);
      await lockHost(tx, scope.organizationId, current.host_id as string);
      await portTable.remove(tx, scope, id);
    });
  },

  history: (db: Db, scope: Scope, id: string) => portTable.history(db, scope, id),
};
