// The agent installed as a new user installs it, in real Chromium and the discovery lab: sign in,
// create a daemon key on the Daemons page, run the commands the page shows (download from this
// server, check the sum, key into a file, run) in a directory outside the repository inside the
// lab's agent namespace, approve the subnet the agent suggests, and read the run's report (counts,
// links) and the hosts on the map. The browser opens the server at the address the lab reaches it
// by (the root namespace's end of the lab's /30), so the commands carry that address, as they would
// carry a LAN address. Root only (network namespaces), else pending with the reason.
// SCREENSHOTS=1 writes docs/web-agent-install.png and docs/web-agent-report.png (1440x900) and
// the phone's (390x844).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import type { Worker } from 'bullmq';
import { startTopologyLayout } from '../../workers/topologyLayout.js';
import { createLab, labUnavailable, SEGMENT_A, spawnInAgentNs, type Lab } from '../lab/lab.js';
import { ensurePackages, LAB_PACKAGES } from '../lab/packages.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { login } from '../support/world.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { expectNoProblems, launchBrowser, openPage, registerUser, signIn, waitForMap, type WatchedPage } from './browser.js';

const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));
const RUN_LIMIT_MS = 240_000;

describe('web application: installing the agent from the Daemons page, in the lab (Chromium)', function () {
  this.timeout(RUN_LIMIT_MS + 120_000);
  let lab: Lab;
  let app: TestApp;
  let api: { url: string; close(): Promise<void> };
  let browser: Browser;
  let layout: Worker | undefined;
  let workerServices: ReturnType<typeof workerServicesFor> | undefined;
  let w: WatchedPage | undefined;
  let dir: string;
  let agent: ReturnType<typeof spawnInAgentNs> | undefined;

  before(async function () {
    this.timeout(300_000);
    const why = labUnavailable();
    if (why) {
      console.log(`      pending: ${why}`);
      this.skip();
    }
    ensurePackages([...LAB_PACKAGES, { pkg: 'curl', file: '/usr/bin/curl' }]);
    lab = await createLab();
    app = await startTestApp();
    api = await lab.forward(Number(new URL(app.url).port));
    workerServices = workerServicesFor(app);
    layout = await startTopologyLayout(workerServices);
    browser = await launchBrowser();
    // Outside the repository and with no node_modules on any parent: the agent has only its own file.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-agent-home-'));
    for (let p = dir; p !== path.dirname(p); p = path.dirname(p)) expect(fs.existsSync(path.join(p, 'node_modules')), p).to.equal(false);
  });
  after(async () => {
    agent?.child.kill('SIGKILL');
    await w?.close();
    await browser?.close();
    await layout?.close();
    await workerServices?.close();
    await api?.close();
    await app?.close();
    await lab?.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('key, download, run, approve, scan: the report counts the hosts and links them, and the map shows them', async () => {
    const user = await registerUser(app.url);
    const session = await login(app.url, user.email, user.password);
    w = await openPage(browser, api.url, [], { width: 1440, height: 900 });
    const page = w.page;
    await signIn(page, api.url, user, '/daemons');

    // 1. A key, and the install block with this server's address and the key in it.
    await page.fill('#daemon-key-name', 'lab agent');
    await page.click('.key-form button[type=submit]');
    await page.locator('#agent-run').waitFor();
    expect(await page.locator('#agent-loopback-warning').count(), 'the lab reaches the server by a real address').to.equal(0);
    const download = (await page.locator('#agent-download').textContent())!;
    const keyFile = (await page.locator('#agent-key-file').textContent())!;
    const run = (await page.locator('#agent-run').textContent())!;
    expect(download).to.include(`${api.url}/downloads/netinventory-agent-linux-x64`).and.include('sha256sum -c');
    expect(keyFile).to.match(/scp_d_\w+/);
    expect(run).to.equal(`./netinventory-agent --server ${api.url} --key-file agent.key`);
    expect(run, 'the key never on the command line').to.not.match(/scp_d_/);
    if (process.env.SCREENSHOTS) await page.screenshot({ path: path.join(DOCS, 'web-agent-install.png'), fullPage: true });

    // 2. The commands as shown, in the agent's namespace (the safety check runs first), from the
    // directory outside the repository. The environment only shortens the wait between polls and
    // keeps to the light port set (the full range is spread over many runs anyway).
    agent = spawnInAgentNs(lab, 'sh', ['-c', [
      'set -e', `cd ${dir}`, `export HOME=${dir} AGENT_INTERVAL=2 AGENT_FULL_RANGE_RUNS=0`, download, keyFile, `exec ${run}`,
    ].join('\n')]);
    const card = page.locator('article.daemon-card');
    await card.waitFor({ timeout: 60_000 }).catch((err) => { throw new Error(`${(err as Error).message}\nagent output:\n${agent!.output().slice(-3000)}`); });
    expect(agent.output()).to.include('netinventory-agent: OK');

    // 3. Nothing scans before a subnet is approved; then the one it suggests (segment A) is.
    await card.getByRole('button', { name: `Approve ${SEGMENT_A}` }).click();
    await card.locator('.targets.approved code', { hasText: SEGMENT_A }).waitFor();

    // 4. The run ends and its report says what it found, with links.
    const report = card.locator('.daemon-report');
    await waitFor('the run report', async () => (await report.locator('dl.summary').count()) > 0 && /complete/i.test((await card.locator('.run-outcome').textContent()) ?? ''), RUN_LIMIT_MS, 1000)
      .catch((err) => { throw new Error(`${(err as Error).message}\nagent output:\n${agent!.output().slice(-3000)}`); });
    const daemons = expectOk(await call(app.url, 'GET', '/api/v1/daemons', { auth: session })) as Array<{ id: string }>;
    const sessions = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemons[0]!.id}/sessions`, { auth: session })) as any[];
    const network = sessions.find((s) => s.discovery_type.type === 'Network' && s.phase === 'Complete');
    expect(network, JSON.stringify(sessions)).to.exist;
    const hosts = expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${user.networkId}&limit=1000`, { auth: session })) as Array<{ id: string; name: string; description: string | null }>;
    // New: what the scan found first (the router, web, redis, printer, quiet-a); the agent's own host
    // came with its self-report before the scan, so the scan found it again, not new.
    const found = hosts.filter((h) => h.description?.includes('Found by the NetInventory agent'));
    expect(found.length, 'segment A: router, web, redis, printer, quiet-a').to.be.at.least(4);
    expect(await report.locator('dd[data-field=hosts_found]').textContent()).to.equal(String(hosts.length));
    expect(await report.locator('dd[data-field=hosts_new]').textContent()).to.equal(String(found.length));
    expect(await report.locator('dd[data-field=hosts_gone]').textContent()).to.equal('0');
    expect(Number(await report.locator('dd[data-field=hosts_changed]').textContent()) + Number(await report.locator('dd[data-field=hosts_unchanged]').textContent())).to.equal(hosts.length - found.length);
    expect(Number(await report.locator('dd[data-field=services_found]').textContent())).to.be.at.least(2); // web's HTTP, redis's Redis (9100 is never probed)
    expect((await report.locator('.host-links.new ul a').allTextContents()).sort()).to.deep.equal(found.map((h) => h.name).sort());
    if (process.env.SCREENSHOTS) {
      // The page scrolls inside the app's frame, so the shot is of the card, scrolled to.
      await card.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(DOCS, 'web-agent-report.png') });
      await page.setViewportSize({ width: 390, height: 844 });
      await report.locator('dl.summary').scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(DOCS, 'web-agent-report-phone.png') });
      await page.setViewportSize({ width: 1440, height: 900 });
    }

    // 5. A new host's link opens it on the map.
    const web = found[0];
    await report.getByRole('link', { name: `${web!.name} on the map` }).click();
    await page.waitForURL(`**/topology?focus=${web!.id}`);
    await waitForMap(page);
    await page.locator(`#details article[aria-label="Host ${web!.name}"]`).waitFor();
    const drawn = Object.values(await page.evaluate(() => (window as any).netinventoryMap.snapshot()) as Record<string, { label?: string }>);
    for (const h of found) expect(drawn.some((n) => n.label?.includes(h.name)), `${h.name} on the map`).to.equal(true);
    expectNoProblems(w);
  });
});
