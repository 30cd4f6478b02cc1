// Helpers for the multi-process test: API and worker processes from the built bundles (dist/) over
// one test database and one Redis prefix, and an SSE reader for the event stream.
import type { ChildProcess } from 'node:child_process';
import type { TestApp } from '../support/app.js';
import type { Credential } from '../support/client.js';
import { readSse } from '../support/sse.js';
import { spawnBundle, waitFor } from '../workers/support.js';

export interface Child {
  name: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True until the process has exited. */
  running: () => boolean;
}

/** A start takes seconds; with every core busy (a loaded CI machine) it has taken 30 s and more. */
const START_TIMEOUT_MS = 90_000;

function start(name: string, bundle: 'server' | 'worker', app: TestApp, env: Record<string, string>): Child {
  // node-postgres reads PGAPPNAME: pg_stat_activity then says which process holds a connection.
  const p = spawnBundle(bundle, app, { PGAPPNAME: name, ...env });
  return { name, ...p, running: () => p.child.exitCode === null && p.child.signalCode === null };
}

const logLines = (out: string) =>
  out.split('\n').filter((l) => l.startsWith('{')).map((l) => { try { return JSON.parse(l) as Record<string, any>; } catch { return {}; } });

/** An API process (PORT=0) and its URL once it listens and answers /api/ready. */
export async function startApi(name: string, app: TestApp, env: Record<string, string>): Promise<Child & { url: string }> {
  const api = start(name, 'server', app, { PORT: '0', ...env });
  const line = await waitFor(`${name} listening`, async () => {
    if (!api.running()) throw new Error(`${name} exited: ${api.output()}`);
    return logLines(api.output()).find((l) => /api listening/.test(l.msg ?? '') && typeof l.port === 'number');
  }, START_TIMEOUT_MS).catch((err: Error) => {
    api.child.kill('SIGKILL'); // not left running behind a failed start
    throw new Error(`${err.message}; its output: ${api.output().slice(-2000)}`);
  });
  const url = `http://127.0.0.1:${line.port}`;
  // Until its Redis connection is up the API answers from an in-process rate limit bucket: wait for ready.
  await waitFor(`${name} ready`, async () => (await fetch(`${url}/api/ready`)).status === 200, START_TIMEOUT_MS)
    .catch((err: Error) => { api.child.kill('SIGKILL'); throw err; });
  return { ...api, url };
}

/** A worker process, once it says it has started every queue's worker. */
export async function startWorker(name: string, app: TestApp, env: Record<string, string>): Promise<Child> {
  const worker = start(name, 'worker', app, env);
  await waitFor(`${name} started`, async () => {
    if (!worker.running()) throw new Error(`${name} exited: ${worker.output()}`);
    return worker.output().includes('worker started');
  }, START_TIMEOUT_MS).catch((err: Error) => { worker.child.kill('SIGKILL'); throw err; });
  return worker;
}

export async function stop(p: Child): Promise<void> {
  if (!p.running()) return;
  p.child.kill('SIGTERM');
  const killer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await p.exited;
  clearTimeout(killer);
}

export interface SseEvent { id: string; event?: string; data: any }

/** An SSE client: the events (frames with an id and data) as they arrive. */
export async function openStream(url: string, auth: Credential, query = '') {
  const controller = new AbortController();
  const headers: Record<string, string> = { Accept: 'text/event-stream' };
  if (auth.cookie) headers.Cookie = auth.cookie;
  if (auth.bearer) headers.Authorization = `Bearer ${auth.bearer}`;
  const res = await fetch(`${url}/api/v1/events/stream${query}`, { headers, signal: controller.signal });
  if (res.status !== 200) throw new Error(`stream on ${url}: ${res.status} ${await res.text()}`);
  const events: SseEvent[] = [];
  void readSse(res.body, (frame) => {
    if (frame.id && frame.data) events.push(frame as SseEvent);
  });
  return { events, close: () => controller.abort() };
}
