// Merging a duplicate host into another (PUT /api/v1/hosts/{destination}/consolidate/{other}), in
// one transaction: the other host's IP addresses, ports, services (with their bindings) and
// interfaces move to the destination; an address or a port the destination already has is not
// duplicated: the bindings and interfaces that used the other's are re-pointed to the
// destination's, so every dependency (whose members are service and binding ids) stays whole. The
// tags are united, an empty hostname or description is filled, then the other host is deleted.
// Every row changed is a new state in its history, so both hosts' pasts stay readable with `at`.
import type { Db } from '../../core/db.js';
import { AppError } from '../../core/errors.js';
import type { Scope } from '../../core/scope.js';
import { compactPositions } from './children.js';
import { hostTable } from './table.js';

const refuse = (reason: string) => new AppError('validation_failed', { reason });

export async function consolidateHosts(tx: Db, scope: Scope, destinationId: string, otherId: string): Promise<void> {
  // Tenancy first (404 / 403), so another organization's id answers as an unknown one.
  const destination = await hostTable.get(tx, scope, destinationId, undefined, true);
  const other = await hostTable.get(tx, scope, otherId, undefined, true);
  if (destinationId === otherId) throw refuse('a host cannot be consolidated into itself');
  if (destination.network_id !== other.network_id) throw refuse('the hosts are on different networks');
  // Every statement names the organization: on a partitioned schema each reads one partition.
  const org = scope.organizationId;
  const daemon = await tx.one<{ id: string }>(`select id from daemons where organization_id = ? and host_id = ? limit 1`, [org, otherId]);
  if (daemon) throw refuse(`a daemon (${daemon.id}) runs on the host to merge: delete it or consolidate the other way`);

  // Ports the destination has already: bindings move to its port, the duplicate goes.
  await tx.query(
    `with same as (
       select o.id as old_id, d.id as new_id from ports o
         join ports d on d.organization_id = ? and d.host_id = ? and d.number = o.number and d.protocol = o.protocol
        where o.organization_id = ? and o.host_id = ?
     ) update bindings b set port_id = same.new_id from same where b.organization_id = ? and b.port_id = same.old_id`,
    [org, destinationId, org, otherId, org],
  );
  await tx.query(`delete from ports o using ports d where o.organization_id = ? and o.host_id = ? and d.organization_id = ? and d.host_id = ? and d.number = o.number and d.protocol = o.protocol`,
    [org, otherId, org, destinationId]);
  await tx.query(`update ports set host_id = ? where organization_id = ? and host_id = ?`, [destinationId, org, otherId]);

  // Addresses likewise (same subnet and address), bindings and interfaces re-pointed.
  const sameAddress = `select o.id as old_id, d.id as new_id from ip_addresses o
    join ip_addresses d on d.organization_id = ? and d.host_id = ? and d.subnet_id = o.subnet_id and d.ip_address = o.ip_address
    where o.organization_id = ? and o.host_id = ?`;
  const sameParams = [org, destinationId, org, otherId];
  await tx.query(`with same as (${sameAddress}) update bindings b set ip_address_id = same.new_id from same where b.organization_id = ? and b.ip_address_id = same.old_id`, [...sameParams, org]);
  await tx.query(`with same as (${sameAddress}) update interfaces i set ip_address_id = same.new_id from same where i.organization_id = ? and i.ip_address_id = same.old_id`, [...sameParams, org]);
  await tx.query(`delete from ip_addresses o using ip_addresses d where o.organization_id = ? and o.host_id = ? and d.organization_id = ? and d.host_id = ? and d.subnet_id = o.subnet_id and d.ip_address = o.ip_address`,
    [org, otherId, org, destinationId]);
  // Moved addresses and services come after the destination's own, then positions are 0..n-1 again.
  for (const table of ['ip_addresses', 'services']) {
    await tx.query(
      `update ${table} set host_id = ?, position = position + (select coalesce(max(position) + 1, 0) from ${table} where organization_id = ? and host_id = ?)
        where organization_id = ? and host_id = ?`,
      [destinationId, org, destinationId, org, otherId],
    );
    await compactPositions(tx, table, { column: 'host_id', id: destinationId, organizationId: org });
  }
  // An ifTable entry whose if_index the destination has is the destination's own: the other's goes.
  await tx.query(`delete from interfaces o using interfaces d where o.organization_id = ? and o.host_id = ? and d.organization_id = ? and d.host_id = ? and d.if_index = o.if_index`,
    [org, otherId, org, destinationId]);
  await tx.query(`update interfaces set host_id = ? where organization_id = ? and host_id = ?`, [destinationId, org, otherId]);

  const tags = [...new Set([...(destination.tags as string[]), ...(other.tags as string[])])];
  await hostTable.update(tx, scope, destinationId, {
    tags,
    hostname: destination.hostname ?? other.hostname,
    description: destination.description ?? other.description,
  });
  await hostTable.remove(tx, scope, otherId);
}
