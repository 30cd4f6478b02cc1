// What the server's API shows of a lab network, and the lab's known truth to score it against
// (test/lab/agent.spec.ts and bench/discovery.ts).
import { cidrInside, LAB_SPACE, ROUTER_IPS, type Lab } from './lab.js';

export interface SeenService { name: string; definition: string; port: number | null; source: string }
/**
 * One address of a host as the server shows it: what the last scans saw (services and ports a scan
 * no longer saw are kept offline by the server; `offlineServices` names their definitions).
 */
export interface SeenHost { id: string; ip: string; mac: string | null; description: string | null; services: SeenService[]; ports: number[]; offlineServices: string[] }

type Auth = { cookie?: string; bearer?: string };

async function get(base: string, auth: Auth, path: string): Promise<any> {
  const headers: Record<string, string> = {};
  if (auth.cookie) headers.Cookie = auth.cookie;
  if (auth.bearer) headers.Authorization = `Bearer ${auth.bearer}`;
  const res = await fetch(base + path, { headers });
  const body = await res.json() as { success: boolean; data: unknown; error?: string };
  if (!res.ok || !body.success) throw new Error(`GET ${path}: ${res.status} ${body.error ?? ''}`);
  return body.data;
}

/** The network's hosts by lab address (other addresses, e.g. the agent's /30 to the server, left out). */
export async function readInventory(base: string, auth: Auth, networkId: string): Promise<Map<string, SeenHost>> {
  const list = await get(base, auth, `/api/v1/hosts?network_id=${networkId}&limit=1000`) as Array<{ id: string }>;
  const byIp = new Map<string, SeenHost>();
  for (const { id } of list) {
    const h = await get(base, auth, `/api/v1/hosts/${id}`);
    const ports = new Map<string, number>(h.ports.filter((p: any) => p.offline_at === null).map((p: any) => [p.id, p.number]));
    const online = (h.services as any[]).filter((s) => s.offline_at === null);
    for (const a of h.ip_addresses as Array<{ ip_address: string; mac_address: string | null }>) {
      if (!cidrInside(a.ip_address, LAB_SPACE)) continue;
      byIp.set(a.ip_address, {
        id, ip: a.ip_address, mac: a.mac_address?.toUpperCase() ?? null, description: h.description,
        ports: [...ports.values()].sort((x, y) => x - y),
        offlineServices: (h.services as any[]).filter((s) => s.offline_at !== null).map((s) => s.service_definition),
        services: online.map((s: any) => ({
          name: s.name, definition: s.service_definition, source: JSON.stringify(s.source),
          port: ports.get(s.bindings?.find((b: any) => b.port_id)?.port_id) ?? null,
        })),
      });
    }
  }
  return byIp;
}

/** The services a fingerprint can tell (the printer's 9100 must not be probed; mid's 5060 says nothing). */
export interface TruthService { host: string; ip: string; port: number; kind: 'http' | 'redis' | 'ssh' | 'postgresql' }

export function labTruth(lab: Lab): { hosts: string[]; services: TruthService[] } {
  const services: TruthService[] = lab.hosts.flatMap((h) => h.services.flatMap((s) =>
    s.kind === 'http' || s.kind === 'redis' || s.kind === 'ssh' || s.kind === 'postgresql' ? [{ host: h.name, ip: s.ip, port: s.port, kind: s.kind }] : []));
  return { hosts: [...lab.hosts.map((h) => h.ip), ...ROUTER_IPS].sort(), services };
}

/** Whether a service name (ours: the service_definition; nmap's: its service name) is the truth's kind. */
export function sameKind(kind: TruthService['kind'], name: string): boolean {
  const patterns: Record<TruthService['kind'], RegExp> = { http: /^http$/i, redis: /^redis$/i, ssh: /^ssh$/i, postgresql: /^postgres(ql)?$/i };
  return patterns[kind].test(name.trim());
}
