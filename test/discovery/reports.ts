// Discovery reports as a Scanopy daemon sends them (the 0.14 vocabulary: `interfaces` are IP
// addresses, bindings name `interface_id`), for the discovery tests.
import { randomUUID } from 'node:crypto';
import type { DaemonClient } from '../daemons/world.js';
import { expectOk } from '../support/client.js';

const NIL = '00000000-0000-0000-0000-000000000000';
const now = () => new Date().toISOString();

export interface ReportOptions {
  hostId?: string;
  name?: string;
  hostname?: string | null;
  description?: string | null;
  interfaces?: Array<{ id?: string; subnet_id: string; ip_address: string; mac_address?: string | null; name?: string }>;
  ports?: Array<{ id?: string; number: number; protocol?: 'Tcp' | 'Udp' }>;
  /** Each service binds the listed port numbers (on all addresses). */
  services?: Array<{ id?: string; name: string; definition?: string; ports?: number[]; bindingIds?: string[] }>;
  metadata?: Array<Record<string, unknown>>;
}

export function hostReport(daemon: DaemonClient, networkId: string, o: ReportOptions = {}) {
  const metadata = o.metadata ?? [{ type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService', daemon_id: daemon.id, date: '2026-11-22T10:00:00Z' }];
  const interfaces = (o.interfaces ?? []).map((i, position) => ({
    id: i.id ?? randomUUID(), created_at: now(), updated_at: now(), network_id: networkId, host_id: NIL, subnet_id: i.subnet_id,
    ip_address: i.ip_address, mac_address: i.mac_address ?? null, name: i.name ?? 'eth0', position,
  }));
  const ports = (o.ports ?? []).map((p) => ({
    id: p.id ?? randomUUID(), created_at: now(), updated_at: now(), host_id: NIL, network_id: NIL, number: p.number, protocol: p.protocol ?? 'Tcp', type: 'Custom',
  }));
  const hostId = o.hostId ?? randomUUID();
  const services = (o.services ?? []).map((s, position) => ({
    id: s.id ?? randomUUID(), created_at: now(), updated_at: now(), host_id: hostId, network_id: networkId, name: s.name,
    service_definition: s.definition ?? s.name, position, virtualization: null, tags: [],
    source: { type: 'DiscoveryWithMatch', metadata, details: { confidence: 'High', reason: { type: 'reason', data: 'port match' } } },
    bindings: (s.ports ?? []).map((number, k) => ({
      id: s.bindingIds?.[k] ?? randomUUID(), created_at: now(), updated_at: now(), service_id: NIL, network_id: NIL, type: 'Port',
      port_id: ports.find((p) => p.number === number)!.id, interface_id: null,
    })),
  }));
  return {
    host: {
      id: hostId, created_at: now(), updated_at: now(), name: o.name ?? o.hostname ?? interfaces[0]?.ip_address ?? 'host',
      hostname: o.hostname === undefined ? 'host.lan' : o.hostname, network_id: networkId, description: o.description ?? null,
      source: { type: 'Discovery', metadata }, virtualization: null, hidden: false, tags: [],
    },
    interfaces, ports, services,
  };
}

/** A subnet as a daemon posts it; answers the stored one (daemon shape). */
export async function postSubnet(daemon: DaemonClient, networkId: string, cidr: string, extra: Record<string, unknown> = {}): Promise<any> {
  return expectOk(await daemon.post('/api/v1/subnets', {
    id: randomUUID(), created_at: now(), updated_at: now(), cidr, network_id: networkId, name: cidr, description: null, subnet_type: 'Lan',
    source: { type: 'Discovery', metadata: [{ type: 'SelfReport', host_id: randomUUID(), daemon_id: daemon.id, date: now() }] }, tags: [],
    ...extra,
  }));
}

export async function postHost(daemon: DaemonClient, report: unknown): Promise<any> {
  return expectOk(await daemon.post('/api/v1/hosts/discovery', report));
}
