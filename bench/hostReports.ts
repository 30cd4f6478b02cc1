// The discovered hosts the ingest benches report (bench/ingest.ts, bench/ingestGrowth.ts): each with
// two addresses (and their MACs), five ports and three services bound to them, as a Scanopy daemon
// sends them (POST /api/v1/hosts/discovery). The benches differ in their address plan only.
import type { DaemonHostRequest } from '../src/modules/discovery/vocabulary.js';
import { hostReport } from '../test/discovery/reports.js';

export const hex2 = (n: number) => (n & 255).toString(16).padStart(2, '0');

export interface AddressPlan {
  /** The `n`th address (a host uses n and n + 1). */
  ip(n: number): string;
  mac(n: number): string;
  /** Hostnames are `host-<i>.<domain>`. */
  domain: string;
}

/** `count` distinct hosts from the `offset`th on; host i has addresses 256 + 2i and 257 + 2i of the plan. */
export function benchHostReports(daemon: { id: string }, networkId: string, subnetId: string, count: number, offset: number, plan: AddressPlan): DaemonHostRequest[] {
  return Array.from({ length: count }, (_, k) => {
    const i = k + offset;
    const a = 256 + 2 * i; // past the plan's first 256 addresses
    return hostReport(daemon as never, networkId, {
      hostname: `host-${i}.${plan.domain}`,
      interfaces: [
        { subnet_id: subnetId, ip_address: plan.ip(a), mac_address: plan.mac(a), name: 'eth0' },
        { subnet_id: subnetId, ip_address: plan.ip(a + 1), mac_address: plan.mac(a + 1), name: 'eth1' },
      ],
      ports: [{ number: 22 }, { number: 80 }, { number: 443 }, { number: 5432 }, { number: 161, protocol: 'Udp' }],
      services: [{ name: 'OpenSSH', ports: [22] }, { name: 'Nginx', ports: [80, 443] }, { name: 'PostgreSQL', ports: [5432, 161] }],
    }) as unknown as DaemonHostRequest;
  });
}
