// Interfaces of hosts (SNMP ifTable entries, spec §2.2): `ip_address_id`, when set, is an IP
// address of the same host; `if_index` is unique per host; `neighbor` is written by discovery only.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { alreadyExists, invalidReference } from '../../core/errors.js';
import type { Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { assertSameParent, lockHost, referencedHost, TIME_ORDER } from '../hosts/children.js';
import { listNetworkScoped } from '../networks/scopedList.js';
import { INTERFACE_WRITABLE } from './schemas.js';
import { interfaceTable } from './table.js';

export type InterfaceWrite = Row & { id?: string; host_id?: string; ip_address_id: string | null; if_index: number; expected_updated_at?: string | null };

/** Callers hold the host lock. */
async function assertFits(db: Db, organizationId: string, hostId: string, id: string, input: InterfaceWrite): Promise<void> {
  if (input.ip_address_id) {
    const ip = await db.one(`select id from ip_addresses where organization_id = ? and id = ? and host_id = ?`, [organizationId, input.ip_address_id, hostId]);
    if (!ip) throw invalidReference('IPAddress', input.ip_address_id, 'ip_address_id');
  }
  const taken = await db.one(
    `select id from interfaces where organization_id = ? and host_id = ? and if_index = ? and id <> ?`, [organizationId, hostId, input.if_index, id]);
  if (taken) throw alreadyExists('Interface', 'if_index', String(input.if_index));
}

const values = (input: InterfaceWrite): Row => Object.fromEntries(INTERFACE_WRITABLE.map((k) => [k, input[k] ?? null]));

const ORDER = { if_index: 'if_index', if_name: 'if_name', admin_status: 'admin_status', oper_status: 'oper_status', ...TIME_ORDER };

export const interfaceService = {
  list: (db: Db, scope: Scope, q: Record<string, any>) =>
    listNetworkScoped(interfaceTable, db, scope, q, { filters: ['host_id', 'ip_address_id', 'admin_status', 'oper_status'], order: ORDER }),

  get: (db: Db, scope: Scope, id: string, at?: string) => interfaceTable.get(db, scope, id, at),

  async create(db: Db, scope: Scope, input: InterfaceWrite) {
    return db.transaction(async (tx) => {
      const host = await referencedHost(tx, scope, input.host_id!);
      const id = randomUUID(); // a body id is ignored
      await assertFits(tx, host.organization_id, host.id, id, input);
      return interfaceTable.insert(tx, {
        id, organization_id: host.organization_id, network_id: host.network_id, host_id: host.id, ...values(input),
      });
    });
  },

  async update(db: Db, scope: Scope, id: string, input: InterfaceWrite) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      const current = await interfaceTable.get(tx, scope, id);
      assertSameParent('host_id', current.host_id, input.host_id, 'An interface');
      await lockHost(tx, scope.organizationId, current.host_id as string);
      await assertFits(tx, scope.organizationId, current.host_id as string, id, input);
      return interfaceTable.update(tx, scope, id, values(input), input.expected_updated_at);
    });
  },

  remove: (db: Db, scope: Scope, id: string) => db.transaction((tx) => interfaceTable.remove(tx, scope, id)),

  history: (db: Db, scope: Scope, id: string) => interfaceTable.history(db, scope, id),
};
