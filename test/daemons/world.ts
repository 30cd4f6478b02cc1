// Daemons for tests: daemon API keys (through the API, as an Admin's session) and a client that
// speaks as one daemon (Bearer key + X-Daemon-ID).
import { randomUUID } from 'node:crypto';
import type { TestApp } from '../support/app.js';
import { call, expectOk, type ApiResponse, type Credential } from '../support/client.js';

export async function createDaemonKey(url: string, session: Credential, networkId: string, body: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const data = expectOk(await call(url, 'POST', '/api/v1/auth/daemon', { auth: session, body: { name: 'daemon key', network_id: networkId, ...body } }), 201);
  return { id: data.api_key.id, key: data.key };
}

export interface DaemonClient {
  id: string;
  key: string;
  post(path: string, body?: unknown): Promise<ApiResponse>;
  get(path: string): Promise<ApiResponse>;
}

export function daemonClient(url: string, key: string, id: string = randomUUID()): DaemonClient {
  const headers = { 'X-Daemon-ID': id };
  return {
    id,
    key,
    post: (path, body = {}) => call(url, 'POST', path, { auth: { bearer: key }, body, headers }),
    get: (path) => call(url, 'GET', path, { auth: { bearer: key }, headers }),
  };
}

export const registerBody = (d: DaemonClient, networkId: string, extra: Record<string, unknown> = {}) => ({
  daemon_id: d.id, network_id: networkId, name: 'scanopy-daemon', mode: 'daemon_poll',
  capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] }, user_id: '00000000-0000-0000-0000-000000000000', version: '0.14.13',
  ...extra,
});

/** Registers the daemon (creating it, its host and its default sessions); answers register's data. */
export async function registerDaemon(d: DaemonClient, networkId: string, extra: Record<string, unknown> = {}): Promise<any> {
  return expectOk(await d.post('/api/daemons/register', registerBody(d, networkId, extra)));
}

/** Rows of a table of the test app's database. */
export async function sql<T = Record<string, any>>(app: TestApp, text: string, params: unknown[] = []): Promise<T[]> {
  return (await app.services.orm.em.fork().execute(text, params)) as T[];
}
