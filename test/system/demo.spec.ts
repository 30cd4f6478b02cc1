// `npm run demo` (issue 28): against a fresh running service, it seeds the realistic network through
// the API and prints a sign-in that works; it writes no file of the checkout.
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { login } from '../support/world.js';
import { NODE, ROOT } from '../workers/support.js';

const gitStatus = () => spawnSync('git', ['status', '--porcelain'], { cwd: ROOT, encoding: 'utf8' }).stdout;

describe('npm run demo', () => {
  let app: TestApp;
  beforeEach(async () => { app = await startTestApp(FIXTURE_BUILDING); });
  afterEach(() => app.close());

  it('seeds a realistic network into the running service and prints a sign-in that works', async function () {
    this.timeout(120_000);
    const before = gitStatus();
    // Not spawnSync: the service runs in this process and must go on answering.
    const run = await promisify(execFile)(NODE, ['--import', 'tsx', 'scripts/demo.ts', app.url], { cwd: ROOT, encoding: 'utf8', timeout: 110_000 });
    const email = /email: +(\S+)/.exec(run.stdout)?.[1];
    const password = /password: +(\S+)/.exec(run.stdout)?.[1];
    expect(run.stdout).to.contain(`Open ${app.url}/`);
    const session = await login(app.url, email!, password!);
    const hosts = expectOk(await call(app.url, 'GET', '/api/v1/hosts?limit=1000', { auth: session }));
    expect(hosts.length).to.be.above(140);
    expect(hosts.map((h: any) => h.name)).to.include.members(['core-sw-01', 'docker-01']);
    expect(gitStatus()).to.equal(before);
  });

  it('says what to do when no service answers', () => {
    const run = spawnSync(NODE, ['--import', 'tsx', 'scripts/demo.ts', 'http://127.0.0.1:9'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(run.status).to.equal(1);
    expect(run.stderr).to.match(/no service answers at http:\/\/127\.0\.0\.1:9: start it first \(npm start\)/);
  });
});
