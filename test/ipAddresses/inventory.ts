// A host with children and the people around it, for the host-children and dependency suites.
import { startTestApp, type TestApp } from '../support/app.js';
import { createNetinventoryClient } from '../../clients/typescript/index.js';
import { call, expectOk, type ApiResponse, type Credential } from '../support/client.js';
import { contractCheck } from '../support/contract.js';
import { createNetwork, createUser, registerTenant, type Tenant } from '../support/world.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';

export interface Inventory {
  app: TestApp;
  t: Tenant;
  subnet: any;
  /** From test/hosts/fixtures.ts: 10.0.0.10 and .11; ports 22/Tcp, 80/Tcp, 161/Udp; nginx bound to 80, snmpd to .11. */
  host: any;
  ip: { a: any; b: any };
  port: { http: any; ssh: any; snmp: any };
  svc: { nginx: any; snmpd: any };
  api: Api;
}

export interface Api {
  get(path: string, auth?: Credential): Promise<ApiResponse>;
  post(path: string, body: unknown, auth?: Credential): Promise<ApiResponse>;
  put(path: string, body: unknown, auth?: Credential): Promise<ApiResponse>;
  del(path: string, auth?: Credential): Promise<ApiResponse>;
}

/**
 * The inventory suites call the API through the generated client (clients/typescript), so every
 * change to the API is also one the client survives; each answer is checked against the document.
 */
export function apiFor(app: TestApp, owner: Credential): Api {
  const send = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, auth: Credential): Promise<ApiResponse> => {
    const client = createNetinventoryClient(app.url, { apiKey: auth.bearer, sessionCookie: auth.cookie });
    client.use(contractCheck);
    // The suites name concrete paths (`/api/v1/ports/<id>?host_id=…`), which the client sends as given.
    const answer = await (client[method] as (path: string, init: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(path, body === undefined ? {} : { body });
    return { status: answer.response.status, headers: answer.response.headers, body: answer.data ?? answer.error };
  };
  return {
    get: (path, auth = owner) => send('GET', path, undefined, auth),
    post: (path, body, auth = owner) => send('POST', path, body, auth),
    put: (path, body, auth = owner) => send('PUT', path, body, auth),
    del: (path, auth = owner) => send('DELETE', path, undefined, auth),
  };
}

export async function startInventory(): Promise<Inventory> {
  const app = await startTestApp();
  const t = await registerTenant(app.url);
  const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
  const host = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id);
  const byIp = (ip: string) => host.ip_addresses.find((i: any) => i.ip_address === ip);
  const byNumber = (n: number) => host.ports.find((p: any) => p.number === n);
  const byName = (n: string) => host.services.find((s: any) => s.name === n);
  return {
    app, t, subnet, host,
    ip: { a: byIp('10.0.0.10'), b: byIp('10.0.0.11') },
    port: { http: byNumber(80), ssh: byNumber(22), snmp: byNumber(161) },
    svc: { nginx: byName('nginx'), snmpd: byName('snmpd') },
    api: apiFor(app, t.owner),
  };
}

/**
 * A second network of the same organization ("Private", subnet 10.9.0.0/24, a host with children
 * there) and a Member granted only the default network.
 */
export async function privateCorner(inv: Inventory) {
  const { app, t } = inv;
  const network = await createNetwork(app.url, t.owner, 'Private');
  const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { name: 'private', cidr: '10.0.0.0/24', network_id: network } }), 201);
  const host = await createHostWithChildren(app.url, t.owner, network, subnet.id, 'hidden-web');
  const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
  const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
  return { network, subnet, host, member, viewer };
}

/** Another organization with its own host and children. */
export async function otherTenant(inv: Inventory) {
  const other = await registerTenant(inv.app.url, 'other');
  const subnet = await createSubnet(inv.app.url, other.owner, other.defaultNetworkId);
  const host = await createHostWithChildren(inv.app.url, other.owner, other.defaultNetworkId, subnet.id, 'theirs');
  return { tenant: other, subnet, host };
}

export const q = (at: string) => `at=${encodeURIComponent(at)}`;
