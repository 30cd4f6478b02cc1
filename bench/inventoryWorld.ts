// The inventory bench's world, shared by bench/run.ts and bench/rls.ts: HTTP helpers, a tenant
// registered through the API, the PUT bodies of a host with 50 children, and the load generator (a
// child process running autocannon, so that its event loop does not share the API's thread).
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';

// ---- HTTP helpers ----------------------------------------------------------------------------

export async function http(base: string, method: string, path: string, opts: { cookie?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (opts.cookie) headers.Cookie = opts.cookie;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) };
}

export function ok(res: { status: number; text: string }, status = 200, what = ''): any {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status}: ${res.text.slice(0, 500)}`);
  return JSON.parse(res.text).data;
}

/** An Owner through the public API (register + login), the Default network and one subnet. */
export async function registerTenant(base: string) {
  const email = `bench-${randomBytes(4).toString('hex')}@example.test`;
  const password = 'correct-horse-battery';
  const user = ok(await http(base, 'POST', '/api/auth/register', { body: { email, password, organization_name: 'Bench org' } }), 201, 'register');
  const login = await http(base, 'POST', '/api/auth/login', { body: { email, password } });
  ok(login, 200, 'login');
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const networkId = user.network_ids[0] as string;
  const subnet = ok(await http(base, 'POST', '/api/v1/subnets', { cookie, body: { network_id: networkId, cidr: '10.0.0.0/8', name: 'bench' } }), 201, 'subnet');
  return { organizationId: user.organization_id as string, networkId, subnetId: subnet.id as string, cookie };
}

// ---- The PUT bodies ----------------------------------------------------------------------------

/**
 * A host with 50 children: 10 IP addresses, 30 ports, 10 services (each binding 2 of the ports:
 * 20 bindings). Bodies A and B name the same children, so every PUT after the first *updates* the
 * host and its 50 children (names, port numbers) instead of recreating them; the bindings are the
 * same in both (updated in place, no new state). The ids chosen here are placeholders: the first
 * PUT gives the children server ids (an id that is not the host's child is a new child's), and
 * `withServerIds` below writes those into both bodies.
 */
export function putBodies(hostId: string, subnetId: string) {
  const ipIds = Array.from({ length: 10 }, () => randomUUID());
  const portIds = Array.from({ length: 30 }, () => randomUUID());
  const services = Array.from({ length: 10 }, (_, i) => ({ id: randomUUID(), bindingIds: [randomUUID(), randomUUID()], ports: [portIds[3 * i]!, portIds[3 * i + 1]!] }));
  const body = (v: 'a' | 'b') => ({
    id: hostId, name: `put-host-${v}`, hostname: 'put-host.lab.example', description: `PUT body ${v}`, hidden: false, tags: [],
    ip_addresses: ipIds.map((id, i) => ({ id, subnet_id: subnetId, ip_address: `10.200.0.${i + 1}`, mac_address: null, name: `${v}-eth${i}` })),
    ports: portIds.map((id, i) => ({ id, number: (v === 'a' ? 10000 : 20000) + i, protocol: 'Tcp' })),
    services: services.map((s, i) => ({
      id: s.id, name: `service-${i}-${v}`, service_definition: 'Custom',
      bindings: s.bindingIds.map((id, k) => ({ id, type: 'Port', port_id: s.ports[k] })),
    })),
  });
  return { a: body('a'), b: body('b') };
}

/** Bodies A and B with the ids the server gave their children (answered by the PUT of `a`). */
export function withServerIds(bodies: ReturnType<typeof putBodies>, answer: any): ReturnType<typeof putBodies> {
  const ids = new Map<string, string>();
  const a = bodies.a;
  const byPosition = [...answer.ip_addresses].sort((x: any, y: any) => x.position - y.position);
  a.ip_addresses.forEach((ip, i) => ids.set(ip.id, byPosition[i].id));
  a.ports.forEach((port) => ids.set(port.id, answer.ports.find((p: any) => p.number === port.number).id));
  a.services.forEach((svc) => {
    const served = answer.services.find((x: any) => x.name === svc.name);
    ids.set(svc.id, served.id);
    svc.bindings.forEach((b) => ids.set(b.id, served.bindings.find((x: any) => x.port_id === ids.get(b.port_id)).id));
  });
  const swap = (body: typeof a) => JSON.parse(JSON.stringify(body), (_k, v) => (typeof v === 'string' && ids.has(v) ? ids.get(v) : v));
  return { a: swap(bodies.a), b: swap(bodies.b) };
}

// ---- Load generation ----------------------------------------------------------------------------

export class LoadGenerator {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, (msg: any) => void>();

  constructor() {
    this.child = fork(new URL('./load.ts', import.meta.url), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
    this.child.on('message', (msg: any) => this.pending.get(msg.id)?.(msg));
  }

  run(options: autocannon.Options): Promise<{ result: autocannon.Result; cpuMs: number }> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, (msg) => {
        this.pending.delete(id);
        if (msg.error) reject(new Error(msg.error));
        else resolve(msg);
      });
      this.child.send({ id, options });
    });
  }

  close(): void {
    this.child.disconnect();
  }
}
