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

export const uniqueEmail = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.test`;

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

// ---- Calls from a chosen loopback address (appended for test/http/{tenancy,rateLimit}.spec.ts) ----
// Anonymous callers are rate limited per client IP (capacity 10, decisions §4). Linux routes all of
// 127.0.0.0/8 to the loopback interface, so a test can act as many distinct anonymous clients.
import { request as httpRequest } from 'node:http';
import type { ApiResponse } from './client.js';
import { captureClientExchange } from './leakCapture.js';

let loopbackCounter = 0;

/** A loopback address not handed out before in this process (127.1.0.1, 127.1.0.2, …). */
export function freshLoopbackIp(): string {
  loopbackCounter += 1;
  const n = loopbackCounter;
  return `127.${1 + (Math.floor(n / (254 * 256)) % 127)}.${Math.floor(n / 254) % 256}.${1 + (n % 254)}`;
}

/** Like `call()`, but the TCP connection is opened from `ip` (the API then sees that client IP). */
export function callFrom(
  ip: string,
  baseUrl: string,
  method: string,
  path: string,
  opts: { auth?: Credential; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.auth?.cookie) headers.Cookie = opts.auth.cookie;
  if (opts.auth?.bearer) headers.Authorization = `Bearer ${opts.auth.bearer}`;
  let payload: Buffer | undefined;
  if (opts.rawBody !== undefined) {
    payload = Buffer.from(opts.rawBody);
    headers['Content-Length'] = String(payload.length);
  } else if (opts.body !== undefined) {
    payload = Buffer.from(JSON.stringify(opts.body));
    headers['Content-Type'] ??= 'application/json';
    headers['Content-Length'] = String(payload.length);
  }
  const url = new URL(baseUrl + path);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, localAddress: ip, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          captureClientExchange(baseUrl, method, path, payload?.toString('utf8'), res.statusCode ?? 0, text);
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* left as text */
          }
          const h = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) h.append(name, v);
          }
          resolve({ status: res.statusCode ?? 0, headers: h, body });
        });
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}
