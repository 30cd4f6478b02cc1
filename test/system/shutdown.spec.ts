// The API process on SIGTERM. Issue 28.7: with an event stream open, it ends its open streams at
// once (an `ended` frame saying why, with the last id), so it exits 0 without waiting for its
// shutdown deadline. And a request whose client already left is waited for before the pool closes.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { startTestApp, type TestApp } from '../support/app.js';
import { registerTenant } from '../support/world.js';
import { NODE, ROOT, waitFor } from '../workers/support.js';
import { bundlePath } from '../../scripts/build.js';
import { connect } from 'node:net';
import pg from 'pg';

describe('system: shutdown', function () {
  this.timeout(90_000);
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp();
  });
  afterEach(() => app.close());

  /** The API as `npm start` runs it (its bundle) on the test app's database, a long shutdown deadline: reaching it would exit 1 with "deadline passed" logged. */
  function startApi() {
    const child = spawn(NODE, ['--enable-source-maps', bundlePath('server')], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '60000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr!.on('data', (c: Buffer) => { out += c.toString(); });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    return { child, output: () => out, exited };
  }

  it('SIGTERM ends the open stream (an ended frame, then the end) and the process exits 0 before its deadline', async () => {
    const { child, output, exited } = startApi();
    try {
      const port = await waitFor('api listening', async () => Number(/"port":(\d+)[^\n]*api listening/.exec(output())?.[1]) || undefined, 30_000);
      const url = `http://127.0.0.1:${port}`;
      const t = await registerTenant(url);
      const headers: Record<string, string> = { Accept: 'text/event-stream' };
      if (t.owner.cookie) headers.Cookie = t.owner.cookie;
      if (t.owner.bearer) headers.Authorization = `Bearer ${t.owner.bearer}`;
      const res = await fetch(`${url}/api/v1/events/stream`, { headers });
      expect(res.status).to.equal(200);
      let text = '';
      let opened!: () => void;
      const open = new Promise<void>((resolve) => { opened = resolve; });
      // Resolves when the server ends the body; an error (a reset connection) is not that end.
      const streamEnd = (async () => {
        const decoder = new TextDecoder();
        try {
          for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
            text += decoder.decode(chunk, { stream: true });
            if (text.includes('retry:')) opened();
          }
          return 'ended';
        } catch (err) {
          return `failed: ${(err as Error).message}`;
        }
      })();
      await open;

      child.kill('SIGTERM');
      expect(await streamEnd).to.equal('ended');
      expect(text).to.match(/event: ended\ndata: \{"reason":"the server is shutting down[^"]*","last_event_id":"\d+"\}\n\n$/);
      expect(await exited).to.deep.equal({ code: 0, signal: null });
      expect(output()).to.not.include('shutdown deadline passed');
      expect(output()).to.match(/"event_streams_ended":1[^\n]*api stopped/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  it('SIGTERM waits for a request whose client already left: it ends before the pool closes (exit 0, no error logged)', async () => {
    const { child, output, exited } = startApi();
    const locker = new pg.Client({ connectionString: app.databaseUrl });
    await locker.connect();
    try {
      const port = await waitFor('api listening', async () => Number(/"port":(\d+)[^\n]*api listening/.exec(output())?.[1]) || undefined, 30_000);
      const url = `http://127.0.0.1:${port}`;
      const t = await registerTenant(url);
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (t.owner.cookie) headers.Cookie = t.owner.cookie;
      if (t.owner.bearer) headers.Authorization = `Bearer ${t.owner.bearer}`;
      const created = await fetch(`${url}/api/v1/hosts`, { method: 'POST', headers, body: JSON.stringify({ network_id: t.defaultNetworkId, name: 'held' }) });
      expect(created.status).to.equal(201);
      const host = (await created.json()).data;
      // The hosts table locked elsewhere: a GET of the host waits on its first statement, and its
      // children are read after it, on connections taken from the pool then.
      await locker.query('begin');
      await locker.query('lock table hosts in access exclusive mode');
      // Sent on a socket of its own, which the client then destroys (it leaves without an answer).
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      const auth = headers.Cookie ? `Cookie: ${headers.Cookie}` : `Authorization: ${headers.Authorization}`;
      socket.write(`GET /api/v1/hosts/${host.id} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n\r\n`);
      // (pg_stat_activity is read once per transaction unless its snapshot is cleared.)
      await waitFor('the GET waiting on the lock', async () => {
        await locker.query('select pg_stat_clear_snapshot()');
        return (await locker.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%from hosts%'`)).rowCount! > 0;
      }, 30_000);
      socket.destroy(); // the client leaves: its connection closes, its handler still waits

      child.kill('SIGTERM');
      await waitFor('shutdown begun', async () => output().includes('api shutting down') || undefined, 30_000);
      // No connection is open any more, but the handler is still waiting on the lock: the process must be too.
      await new Promise((r) => setTimeout(r, 500));
      expect(child.exitCode, output()).to.equal(null);
      await locker.query('commit');

      expect(await exited).to.deep.equal({ code: 0, signal: null });
      expect(output()).to.not.match(/unhandled error|driver has already been destroyed|shutdown deadline passed/);
    } finally {
      await locker.end();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
