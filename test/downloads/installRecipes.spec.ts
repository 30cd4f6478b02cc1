// The install block's recipes (web/src/agentInstall.ts), run as a user on another machine would
// run them: the download commands against this server's /downloads (the sum checked, a wrong sum
// refused), the key file (owner-only, the key byte for byte whatever it holds), and the systemd
// unit through `systemd-analyze verify`. The run command itself is run in the lab by
// test/web/agentInstall.spec.ts; the container recipe needs an engine this machine lacks.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { AGENT_ARTIFACTS, DOWNLOADS_DIR } from '../../src/modules/downloads/artifacts.js';
import { containerRecipe, downloadCommands, installedName, keyFileCommand, runCommand, systemdCommands, systemdUnit, UNIT_NAME, type DownloadRef } from '../../web/src/agentInstall.js';
import { ensurePackages, SYSTEMD_PACKAGES } from '../lab/packages.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';

/** A shell script, run without blocking this process (its server answers the script's curl). */
function sh(script: string, cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.once('error', reject).once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('agent install recipes', () => {
  let app: TestApp;
  let downloads: DownloadRef[];
  let dir: string;
  before(async () => {
    app = await startTestApp();
    downloads = expectOk(await call(app.url, 'GET', '/api/v1/downloads')).files;
  });
  after(async () => app?.close());
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-install-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('the download commands fetch the build, check its sum and make it executable; a wrong sum stops them', async function () {
    this.timeout(120_000);
    const js = downloads.find((d) => d.kind === 'javascript')!;
    const exe = downloads.find((d) => d.file === 'netinventory-agent-linux-x64')!;
    for (const d of [js, exe]) {
      const run = await sh(`set -e\n${downloadCommands({ download: d, serverUrl: app.url })}`, dir);
      expect(run.status, run.stderr).to.equal(0);
      expect(run.stdout).to.include(`${installedName(d)}: OK`);
      const saved = path.join(dir, installedName(d));
      expect(fs.readFileSync(saved).equals(fs.readFileSync(path.join(DOWNLOADS_DIR, d.file)))).to.equal(true);
      if (d.kind === 'executable') expect(fs.statSync(saved).mode & 0o111, 'executable').to.not.equal(0);
    }
    const tampered = await sh(`set -e\n${downloadCommands({ download: { ...js, sha256: '0'.repeat(64) }, serverUrl: app.url })}`, dir);
    expect(tampered.status).to.not.equal(0);
    expect(tampered.stderr + tampered.stdout).to.match(/FAILED/);
  });

  it('the key file holds the key exactly and only its owner may read it', async () => {
    for (const key of ['scp_d_abc123', "scp_d_it's $HOME `id` \\n"]) {
      const run = await sh(keyFileCommand({ download: downloads[0]!, serverUrl: app.url, key }), dir);
      expect(run.status, run.stderr).to.equal(0);
      const file = path.join(dir, 'agent.key');
      expect(fs.readFileSync(file, 'utf8')).to.equal(`${key}\n`);
      expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
      fs.rmSync(file);
    }
  });

  it('the systemd unit passes systemd-analyze verify for each build (and a broken one does not)', function () {
    this.timeout(60_000);
    if (process.getuid?.() === 0) ensurePackages(SYSTEMD_PACKAGES);
    if (!fs.existsSync('/usr/bin/systemd-analyze')) this.skip();
    const verify = (unit: string) => {
      fs.writeFileSync(path.join(dir, UNIT_NAME), unit);
      return spawnSync('systemd-analyze', ['verify', path.join(dir, UNIT_NAME)], { encoding: 'utf8' });
    };
    for (const artifact of AGENT_ARTIFACTS) {
      const d = downloads.find((x) => x.file === artifact.file)!;
      // The unit names the file where the install commands put it; here, where the build is.
      const unit = systemdUnit({ download: d, serverUrl: 'https://inventory.example.com' }, path.join(DOWNLOADS_DIR, d.file));
      const result = verify(unit);
      expect(result.status, `${d.file}: ${result.stderr}`).to.equal(0);
      expect(result.stderr.trim(), d.file).to.equal('');
    }
    const broken = verify(systemdUnit({ download: downloads[0]!, serverUrl: 'https://x' }, path.join(DOWNLOADS_DIR, 'missing')).replace('DynamicUser=yes', 'DynamicUsr=yes'));
    expect(broken.status).to.not.equal(0);
    expect(broken.stderr).to.match(/Unknown key 'DynamicUsr'|not executable/);
  });
});

describe('docs/agent.md', () => {
  it('prints the recipes the Daemons page shows (the same functions, for https://inventory.example.com)', () => {
    const docs = fs.readFileSync(new URL('../../docs/agent.md', import.meta.url), 'utf8');
    const i = { download: { file: 'netinventory-agent-linux-x64', kind: 'executable', sha256: '', url: 'https://inventory.example.com/downloads/netinventory-agent-linux-x64' }, serverUrl: 'https://inventory.example.com' };
    for (const recipe of [systemdCommands(i), containerRecipe(i), runCommand(i)]) expect(docs).to.include(recipe);
  });
});
