// Builds tenants for a test: an organization with its Owner (session), networks, users of each
// role, and API keys, all through the public API.
import { randomBytes } from 'node:crypto';
import { call, expectOk, type Credential } from './client.js';

export const PASSWORD = 'correct-horse-battery';

export interface Tenant {
  orgId: string;
  owner: Credential;
  ownerId: string;
  defaultNetworkId: string;
}

const uniqueEmail = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.test`;

export async function login(url: string, email: string, password = PASSWORD): Promise<Credential> {
  const res = await call(url, 'POST', '/api/auth/login', { body: { email, password } });
  expectOk(res);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  return { cookie };
}

export async function registerTenant(url: string, label = 'owner'): Promise<Tenant> {
  const email = uniqueEmail(label);
  const user = expectOk(await call(url, 'POST', '/api/auth/register', { body: { email, password: PASSWORD, organization_name: `Org ${label}` } }), 201);
  const owner = await login(url, email);
  return { orgId: user.organization_id, owner, ownerId: user.id, defaultNetworkId: user.network_ids[0] };
}

export async function createNetwork(url: string, auth: Credential, name = 'Lab'): Promise<string> {
  return expectOk(await call(url, 'POST', '/api/v1/networks', { auth, body: { name } }), 201).id;
}

export async function createUser(url: string, admin: Credential, permissions: string, networkIds: string[] = []) {
  const email = uniqueEmail(permissions.toLowerCase());
  const user = expectOk(await call(url, 'POST', '/api/v1/users', { auth: admin, body: { email, password: PASSWORD, permissions, network_ids: networkIds } }), 201);
  return { id: user.id as string, auth: await login(url, email) };
}

export async function createKey(url: string, session: Credential, body: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const data = expectOk(await call(url, 'POST', '/api/v1/auth/keys', { auth: session, body: { name: 'key', ...body } }), 201);
  return { id: data.api_key.id, key: data.key };
}
