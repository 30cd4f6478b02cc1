// A small HTTP client for tests: JSON in, envelope out, with a user's credentials.
import { appendFileSync } from 'node:fs';
import { expect } from 'chai';
import { contractViolations } from './contract.js';
import { captureClientExchange } from './leakCapture.js';

export interface Credential {
  cookie?: string;
  bearer?: string;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  opts: { auth?: Credential; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.auth?.cookie) headers.Cookie = opts.auth.cookie;
  if (opts.auth?.bearer) headers.Authorization = `Bearer ${opts.auth.bearer}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, { method, headers, body });
  const text = await res.text();
  captureClientExchange(baseUrl, method, path, body, res.status, text); // a spawned API's answer (issue 37)
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: left as text so the assertion shows it */
  }
  // A daemon calling a user route gets the daemon protocol's answer (x-daemon-variant), not checked here.
  const violations = headers['X-Daemon-ID'] ? [] : contractViolations(method, baseUrl + path, res.status, res.headers.get('content-type'), parsed);
  if (violations.length) {
    // CONTRACT_LOG=<file> collects the mismatches of a whole run instead of failing at the first.
    if (process.env.CONTRACT_LOG) appendFileSync(process.env.CONTRACT_LOG, `${violations.join('\n')}\n`);
    else throw new Error(`The answer does not match the OpenAPI document:\n${violations.join('\n')}`);
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Asserts an enveloped error with the given status and code. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body).to.include({ success: false, code });
  expect(res.body.error).to.be.a('string').and.not.empty;
  expect(res.body.meta).to.have.property('api_version', 1);
  expect(res.body.meta.server_version).to.match(/^\d+\.\d+\.\d+/);
}

export function expectOk(res: ApiResponse, status = 200): any {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body.success).to.equal(true);
  expect(res.body.meta).to.have.property('api_version', 1);
  return res.body.data;
}
