// Starting the service as a person does: the startup line names the docs, `/` leads to them, and a
// port that is taken is said in one line, by `npm start` (before the worker starts) and by the API.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { startTestApp, type TestApp } from '../support/app.js';
import { NODE, ROOT, waitFor } from '../workers/support.js';
import { bundlePath } from '../../scripts/build.js';

/** A bundle `npm start` runs (dist/…), or a TypeScript script through tsx (as `npm start` itself). */
function run(script: string, env: Record<string, string>) {
  const args = script.endsWith('.mjs') ? ['--enable-source-maps', script] : ['--import', 'tsx', script];
  const child = spawn(NODE, args, {
    cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => { out.stdout += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { out.stderr += c.toString(); });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out, exited };
}

const lines = (text: string) => text.split('\n').filter((l) => l.trim() && !l.startsWith('npm warn'));

describe('system: starting the service', function () {
  this.timeout(60_000);
  let app: TestApp;
  let busy: net.Server;
  let busyPort: number;
  beforeEach(async () => {
    app = await startTestApp();
    busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, resolve)); // every address, as the API listens
    busyPort = (busy.address() as net.AddressInfo).port;
  });
  afterEach(async () => {
    await new Promise((resolve) => busy.close(resolve));
    await app.close();
  });

  it('the startup line gives the URL of the web application and of the API docs; / is the web application', async () => {
    const api = run(bundlePath('server'), { DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, PORT: '0' });
    try {
      const line = await waitFor('api listening', async () => lines(api.out.stdout).map((l) => JSON.parse(l)).find((l) => /api listening/.test(l.msg)), 30_000);
      expect(line.msg).to.match(/^api listening on http:\/\/localhost:\d+ \(web application\), API docs at http:\/\/localhost:\d+\/api\/docs$/);
      const res = await fetch(`${line.docs.replace('/api/docs', '')}/`, { redirect: 'manual' });
      expect(res.status).to.equal(200);
      expect(await res.text()).to.match(/<script type="module" src="\/assets\/app-[\w]+\.js"><\/script>/);
    } finally {
      api.child.kill('SIGTERM');
      await api.exited;
    }
  });

  it('the API on a taken port says so in one line and exits 1', async () => {
    const api = run(bundlePath('server'), { DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, PORT: String(busyPort) });
    expect(await api.exited).to.equal(1);
    const said = lines(api.out.stdout).map((l) => JSON.parse(l));
    const errors = said.filter((l) => l.level >= 50);
    expect(errors.map((l) => l.msg)).to.deep.equal([`port ${busyPort} is already in use: is netinventory (or another program) running there? Stop it or choose another PORT.`]);
    expect(lines(api.out.stderr)).to.deep.equal([]);
  });

  it('npm start on a taken port says so in one line and starts no worker', async () => {
    const start = run('scripts/start.ts', { PORT: String(busyPort) });
    expect(await start.exited).to.equal(1);
    expect(lines(start.out.stderr)).to.deep.equal([`[start] port ${busyPort} is already in use: is netinventory (or another program) running there? Stop it or choose another PORT.`]);
    expect(start.out.stdout).to.not.contain('worker started');
  });
});
