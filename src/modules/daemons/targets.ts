// The subnets a daemon may scan. A daemon scans only what it was given explicitly: the
// subnets it reports being on (capabilities.interfaced_subnet_ids, from its SelfReport) are
// suggestions, and an operator approves some of them (or any other subnet of the daemon's network,
// a routed one). The approved ones go out with the daemon's Network work (withApprovedTargets).
// Kept in its own table (migration 0018): an approval is a fact about a daemon and a subnet, with
// who approved it and when, and a revocation keeps the record (revoked_at, revoked_by).
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError, invalidReference, notFound } from '../../core/errors.js';
import { isoTimestamp, type Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { queueScanOfFirstTarget, type DaemonRef } from '../discovery/sessions.js';
import { daemonTable } from './table.js';

/** What an approval lets the daemon do there besides its port scan (both sent with its work). */
export interface TargetOptions {
  /** SNMP v2c with the community `public` on the subnet's live hosts (default on). */
  snmp_public?: boolean;
  /** Probe the raw printing ports 9100–9107 (default off: a printer prints what it receives). */
  probe_raw_socket_ports?: boolean;
}

export interface TargetInput extends TargetOptions {
  subnet_id?: string;
  cidr?: string;
}

interface ApprovedRow { subnet_id: string; cidr: string; name: string; approved_at: unknown; approved_by: string | null; snmp_public: boolean; probe_raw_socket_ports: boolean }

const approvedView = (r: ApprovedRow) => ({
  subnet_id: r.subnet_id, cidr: r.cidr, name: r.name, approved_at: isoTimestamp(r.approved_at), approved_by: r.approved_by,
  snmp_public: r.snmp_public, probe_raw_socket_ports: r.probe_raw_socket_ports,
});

/** Live approvals of a daemon whose subnet still exists on the daemon's network, oldest first (every table named by organization: one partition each). */
const APPROVED_SQL = `
  select t.subnet_id, s.cidr::text as cidr, s.name, t.approved_at, t.approved_by, t.snmp_public, t.probe_raw_socket_ports
  from daemon_targets t join daemons d on d.organization_id = ? and d.id = t.daemon_id
    join subnets s on s.organization_id = ? and s.id = t.subnet_id and s.network_id = d.network_id
  where t.organization_id = ? and t.daemon_id = ? and t.revoked_at is null
  order by t.approved_at, s.cidr, t.subnet_id`;
const approvedParams = (organizationId: string, daemonId: string) => [organizationId, organizationId, organizationId, daemonId];

/** The subnet a body names, on the daemon's network: by id, or by CIDR (never created here). */
async function resolveSubnet(db: Db, daemon: Row, input: TargetInput): Promise<{ id: string }> {
  if (input.subnet_id) {
    const s = await db.one<{ id: string; network_id: string; organization_id: string }>(
      `select id, network_id, organization_id from subnets where organization_id = ? and id = ?`, [daemon.organization_id, input.subnet_id]);
    if (!s) throw invalidReference('Subnet', input.subnet_id, 'subnet_id');
    if (s.network_id !== daemon.network_id) throw new AppError('entity_network_mismatch', { entity: 'Subnet', id: input.subnet_id });
    return s;
  }
  const s = await db.one<{ id: string }>(
    `select id from subnets where organization_id = ? and network_id = ? and cidr = ?::cidr order by created_at, id limit 1`, [daemon.organization_id, daemon.network_id, input.cidr],
  );
  if (!s) throw invalidReference('Subnet', input.cidr!, 'cidr');
  return s;
}

export const daemonTargets = {
  /** What a daemon is approved to scan, and what it suggests (its subnets not yet approved). */
  async list(db: Db, scope: Scope, daemonId: string) {
    const daemon = await daemonTable.get(db, scope, daemonId); // 404 / 403 as every daemon read
    const approved = await db.query<ApprovedRow>(APPROVED_SQL, approvedParams(scope.organizationId, daemonId));
    const taken = new Set(approved.map((a) => a.subnet_id));
    const reported = ((daemon.capabilities as { interfaced_subnet_ids?: string[] } | null)?.interfaced_subnet_ids ?? []).filter((id) => !taken.has(id));
    const suggested = reported.length
      ? await db.query<{ subnet_id: string; cidr: string; name: string }>(
        `select s.id as subnet_id, s.cidr::text as cidr, s.name from subnets s
         where s.organization_id = ? and s.id = any(?::uuid[]) and s.network_id = ? order by s.cidr, s.id`,
        [scope.organizationId, reported, daemon.network_id],
      )
      : [];
    return { approved: approved.map(approvedView), suggested };
  },

  /**
   * Approves a subnet for a daemon. Approving one already approved changes nothing (the first
   * approval's who and when stay). A CIDR names the network's subnet with it: approval never creates
   * inventory (a routed subnet is created through its own route first; an unknown CIDR is most
   * likely a typo, and guessing a subnet's name and type here would be worse).
   * The approval that gives a daemon its first subnet to scan also queues its Network scan (a
   * daemon has none queued before: queueDefaultSessions).
   */
  async approve(db: Db, scope: Scope, daemonId: string, input: TargetInput) {
    return db.transaction(async (tx) => {
      const daemon = await daemonTable.get(tx, scope, daemonId, undefined, true); // serialises approvals of one daemon
      const subnet = await resolveSubnet(tx, daemon, input);
      const hadNone = !(await approvedSubnetIds(tx, scope.organizationId, daemonId)).length;
      await tx.query(
        `insert into daemon_targets (id, organization_id, network_id, daemon_id, subnet_id, approved_by, snmp_public, probe_raw_socket_ports)
         values (?, ?, ?, ?, ?, ?, ?, ?)
         on conflict (daemon_id, subnet_id, organization_id) where revoked_at is null do nothing`,
        [randomUUID(), daemon.organization_id, daemon.network_id, daemonId, subnet.id, scope.userId || null, input.snmp_public ?? true, input.probe_raw_socket_ports ?? false],
      );
      const approved = await tx.query<ApprovedRow>(APPROVED_SQL, approvedParams(scope.organizationId, daemonId));
      if (hadNone && approved.length) await queueScanOfFirstTarget(tx, daemon as unknown as DaemonRef);
      return approvedView(approved.find((a) => a.subnet_id === subnet.id)!);
    });
  },

  /** Changes what a live approval lets the daemon do (404 when the subnet is not approved). */
  async update(db: Db, scope: Scope, daemonId: string, subnetId: string, options: TargetOptions) {
    return db.transaction(async (tx) => {
      await daemonTable.get(tx, scope, daemonId, undefined, true);
      const changed = await tx.query(
        `update daemon_targets set snmp_public = coalesce(?, snmp_public), probe_raw_socket_ports = coalesce(?, probe_raw_socket_ports)
         where organization_id = ? and daemon_id = ? and subnet_id = ? and revoked_at is null returning id`,
        [options.snmp_public ?? null, options.probe_raw_socket_ports ?? null, scope.organizationId, daemonId, subnetId],
      );
      if (!changed.length) throw notFound('DaemonTarget', subnetId);
      const approved = await tx.query<ApprovedRow>(APPROVED_SQL, approvedParams(scope.organizationId, daemonId));
      const row = approved.find((a) => a.subnet_id === subnetId);
      if (!row) throw notFound('DaemonTarget', subnetId); // approved, but its subnet is gone from the daemon's network
      return approvedView(row);
    });
  },

  /** Revokes an approval (its record stays, with who revoked it); 404 when the subnet is not approved. */
  async revoke(db: Db, scope: Scope, daemonId: string, subnetId: string) {
    return db.transaction(async (tx) => {
      await daemonTable.get(tx, scope, daemonId, undefined, true);
      const revoked = await tx.query(
        `update daemon_targets set revoked_at = now(), revoked_by = ? where organization_id = ? and daemon_id = ? and subnet_id = ? and revoked_at is null returning id`,
        [scope.userId || null, scope.organizationId, daemonId, subnetId],
      );
      if (!revoked.length) throw notFound('DaemonTarget', subnetId);
      return null;
    });
  },
};

/** The ids of the subnets a daemon is approved to scan (live subnets of its network). */
export async function approvedSubnetIds(db: Db, organizationId: string, daemonId: string): Promise<string[]> {
  return (await db.query<ApprovedRow>(APPROVED_SQL, approvedParams(organizationId, daemonId))).map((r) => r.subnet_id);
}

/**
 * A discovery type as handed to the daemon: a Network discovery of "every subnet" (subnet_ids
 * null) gets the daemon's approved subnets. With none approved (all revoked while it waited) it
 * stays null: our agent then scans only its --targets, and upstream Scanopy daemons keep their
 * behaviour. An explicit list is left as it is. The stored session is not changed (the approvals
 * count when it is handed out).
 */
export async function withApprovedTargets<T>(db: Db, organizationId: string, daemonId: string, discoveryType: T): Promise<T> {
  const type = discoveryType as Record<string, unknown> | null;
  if (!type || type.type !== 'Network') return discoveryType;
  const approved = await db.query<ApprovedRow>(APPROVED_SQL, approvedParams(organizationId, daemonId));
  // Each approved subnet's options (our agent reads them; Scanopy daemons ignore the field).
  const targetOptions = approved.map((a) => ({ subnet_id: a.subnet_id, snmp_public: a.snmp_public, probe_raw_socket_ports: a.probe_raw_socket_ports }));
  const withOptions = targetOptions.length ? { ...type, target_options: targetOptions } : type;
  if (type.subnet_ids != null || !approved.length) return withOptions as T;
  return { ...withOptions, subnet_ids: approved.map((a) => a.subnet_id) } as T;
}
