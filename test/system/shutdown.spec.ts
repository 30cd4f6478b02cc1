// Issue 28.7: SIGTERM with an event stream open. The API process ends its open streams at once
// (an `ended` frame saying why, with the last id), so it exits 0 without waiting for its shutdown
// deadline. The deadline is set long here: reaching it would exit 1 with "deadline passed" logged.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { startTestApp, type TestApp } from '../support/app.js';
import { registerTenant } from '../support/world.js';
import { NODE, ROOT, waitFor } from '../workers/support.js';
import { bundlePath } from '../../scripts/build.js';

describe('system: shutdown with an event stream open', function () {
  this.timeout(90_000);
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp();
  });
  afterEach(() => app.close());

  it('SIGTERM ends the open stream (an ended frame, then the end) and the process exits 0 before its deadline', async () => {
    const child = spawn(NODE, ['--enable-source-maps', bundlePath('server')], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '30000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr!.on('data', (c: Buffer) => { out += c.toString(); });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      const port = await waitFor('api listening', async () => Number(/"port":(\d+)[^\n]*api listening/.exec(out)?.[1]) || undefined, 30_000);
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
      expect(out).to.not.include('shutdown deadline passed');
      expect(out).to.match(/"event_streams_ended":1[^\n]*api stopped/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
