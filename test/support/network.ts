// A small network made through the API, shared by the topology tests and the browser tests: two
// subnets; web (2 addresses), db (1), bare (no address), a hidden host; two dependencies; an
// application tag; virtualization as Scanopy daemons report it; a physical link.
import { randomUUID } from 'node:crypto';
import type { TestApp } from './app.js';
import { call, expectOk, type Credential } from './client.js';

export interface Net {
  subnetA: any; subnetB: any; web: any; db: any; bare: any; hidden: any; app: any;
  svc: Record<'nginx' | 'metrics' | 'agent' | 'postgres' | 'cron', string>;
  ip: Record<'webA' | 'webB' | 'dbA', string>;
  deps: { path: any; hub: any };
}

/** Two subnets; web (2 addresses), db (1), bare (no address), a hidden host; two dependencies; an application tag; a physical link. */
export async function buildNetwork(app: TestApp, auth: Credential, networkId: string): Promise<Net> {
  const post = async (path: string, body: unknown) => expectOk(await call(app.url, 'POST', path, { auth, body }), 201);
  const subnetA = await post('/api/v1/subnets', { network_id: networkId, cidr: '10.1.0.0/24', name: 'office' });
  const subnetB = await post('/api/v1/subnets', { network_id: networkId, cidr: '10.2.0.0/24', name: 'servers' });
  const appTag = await post('/api/v1/tags', { name: 'shop', color: 'Teal', is_application: true });
  const [p443, ipA, ipB] = [randomUUID(), randomUUID(), randomUUID()];
  const web = await post('/api/v1/hosts', {
    network_id: networkId, name: 'web', hostname: 'web.lan',
    ip_addresses: [{ id: ipA, subnet_id: subnetA.id, ip_address: '10.1.0.10' }, { id: ipB, subnet_id: subnetB.id, ip_address: '10.2.0.10' }],
    ports: [{ id: p443, number: 443, protocol: 'Tcp' }],
    services: [
      { name: 'nginx', service_definition: 'Nginx', tags: [appTag.id], bindings: [{ type: 'Port', port_id: p443 }] },
      { name: 'metrics', service_definition: 'Prometheus', bindings: [{ type: 'IPAddress', ip_address_id: ipB }] },
      { name: 'agent', service_definition: 'Custom', bindings: [] },
    ],
  });
  const p5432 = randomUUID();
  const db = await post('/api/v1/hosts', {
    network_id: networkId, name: 'db',
    ip_addresses: [{ subnet_id: subnetA.id, ip_address: '10.1.0.20' }],
    ports: [{ id: p5432, number: 5432, protocol: 'Tcp' }],
    services: [{ name: 'postgres', service_definition: 'PostgreSQL', tags: [appTag.id], bindings: [{ type: 'Port', port_id: p5432 }] }],
  });
  const bare = await post('/api/v1/hosts', { network_id: networkId, name: 'bare', services: [{ name: 'cron', service_definition: 'Custom', bindings: [] }] });
  const hidden = await post('/api/v1/hosts', { network_id: networkId, name: 'ghost', hidden: true, ip_addresses: [{ subnet_id: subnetA.id, ip_address: '10.1.0.99' }] });
  const svcOf = (host: any, name: string) => host.services.find((s: any) => s.name === name).id as string;
  const svc = { nginx: svcOf(web, 'nginx'), metrics: svcOf(web, 'metrics'), agent: svcOf(web, 'agent'), postgres: svcOf(db, 'postgres'), cron: svcOf(bare, 'cron') };
  const ip = {
    webA: web.ip_addresses.find((i: any) => i.ip_address === '10.1.0.10').id, webB: web.ip_addresses.find((i: any) => i.ip_address === '10.2.0.10').id,
    dbA: db.ip_addresses[0].id,
  };
  // Virtualization as Scanopy daemons report it: db is a VM under web's "metrics"; agent a container under nginx.
  const put = async (path: string, body: unknown) => expectOk(await call(app.url, 'PUT', path, { auth, body }));
  await put(`/api/v1/hosts/${db.id}`, { id: db.id, name: 'db', hidden: false, tags: [], virtualization: { type: 'Proxmox', details: { service_id: svc.metrics, vm_id: 101 } } });
  await put(`/api/v1/services/${svc.agent}`, { name: 'agent', service_definition: 'Custom', tags: [], virtualization: { type: 'Docker', details: { service_id: svc.nginx } }, bindings: [] });
  const path = await post('/api/v1/dependencies', {
    name: 'checkout', network_id: networkId, color: 'Blue', dependency_type: 'RequestPath', edge_style: 'Bezier',
    members: { type: 'Services', service_ids: [svc.nginx, svc.postgres] },
  });
  const hub = await post('/api/v1/dependencies', {
    name: 'db users', network_id: networkId, color: 'Red', dependency_type: 'HubAndSpoke', edge_style: 'Straight',
    members: { type: 'Services', service_ids: [svc.postgres, svc.nginx, svc.metrics] },
  });
  // A physical link, recorded on one side only (discovery fills `neighbor`).
  const webIf = await post('/api/v1/interfaces', { host_id: web.id, if_index: 1, if_name: 'eth0' });
  const dbIf = await post('/api/v1/interfaces', { host_id: db.id, if_index: 1, if_name: 'eth0' });
  await app.services.orm.em.fork().execute(`update interfaces set neighbor = ?::jsonb where id = ?`, [JSON.stringify({ interface_id: dbIf.id }), webIf.id]);
  return { subnetA, subnetB, web, db, bare, hidden, app: appTag, svc, ip, deps: { path, hub } };
}
