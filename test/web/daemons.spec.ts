// The Daemons page (issue 25.3) in real headless Chromium against a real app, the daemon's side
// driven through HTTP as a daemon (test/daemons/world.ts): waiting for a target, approve a suggested
// subnet (which starts the first scan), "Scan now", the running session's progress (polled), the last
// run's summary (its new and gone hosts open on the map and in the hosts list) and report, an agent
// that stopped (not running), cancel (pending and running), and how to start an agent on the empty
// map, the empty hosts list and the Daemons page with no daemon.
// SCREENSHOTS=1 writes docs/web-daemons.png (1440×900) and docs/web-daemons-phone.png (390×844);
// DAEMON_SHOTS=<dir> writes the page with a run's summary at both sizes into <dir>.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { call, expectOk, type Credential } from '../support/client.js';
import { login } from '../support/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, openPage, pageWidth, signIn, waitForMap, webWorld, type WatchedPage } from './browser.js';

const STATUS = { name: 'lab-agent', mode: 'daemon_poll', version: '0.14.13' };
/** What this project's agent announces (agent/config.ts AGENT_VERSION). */
const AGENT_VERSION = '0.14.13+netinventory-agent.0.1.0';
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));
const REPORT = {
  addresses_tried: 254, probes_sent: 1790,
  alive_by_evidence: { tcp_open: 5, tcp_refused: 2, neighbour: 7, udp_dns: 1 },
  services_by_rule: { 'http-title': 2, 'ssh-banner': 1, 'redis-ping': 1, 'postgresql-ssl': 1 },
  warnings: ['198.18.3.0/26: 62 addresses answered port 80 alike (a middlebox?): counted as no host'],
  incomplete: ['198.18.1.1: SNMP walk cut short after IF-MIB (timeout)'],
};

describe('web application: the Daemons page (Chromium)', function () {
  this.timeout(90_000);
  let w: WatchedPage | undefined;
  let session: Credential;
  let d: DaemonClient;
  let lan: any;
  let dmz: any;
  const world = webWorld({ ready: async ({ app, user }) => { session = await login(app.url, user.email, user.password); } });
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  const sessions = async () => expectOk(await call(world.app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth: session })) as any[];
  /** The version the daemon announces (Scanopy's, unless a test runs our agent). */
  let version = STATUS.version;
  const requestWork = async () => expectOk(await d.post(`/api/daemons/${d.id}/request-work`, { ...STATUS, version })) as [any, boolean];
  const update = async (work: any, change: Record<string, unknown>) => expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, ...change }));
  const now = () => new Date().toISOString();

  /** A registered agent on two subnets (its SelfReport run): nothing queued, nothing approved. */
  async function agentOnTwoSubnets(announced = STATUS.version) {
    version = announced;
    const net = world.user.networkId;
    d = daemonClient(world.app.url, (await createDaemonKey(world.app.url, session, net)).key);
    await registerDaemon(d, net, { name: 'lab-agent', version });
    lan = await postSubnet(d, net, '198.18.1.0/24', { name: 'lab lan' });
    dmz = await postSubnet(d, net, '198.18.2.0/24', { name: 'lab dmz' });
    expectOk(await d.post(`/api/daemons/${d.id}/update-capabilities`, { has_docker_socket: false, interfaced_subnet_ids: [lan.id, dmz.id] }));
    const [selfReport] = await requestWork();
    expect(selfReport.discovery_type.type).to.equal('SelfReport');
    await update(selfReport, { phase: 'Complete', progress: 100, finished_at: now() });
  }
  const approveLan = async () => expectOk(await call(world.app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: session, body: { subnet_id: lan.id } }));
  const scanNow = async () => expectOk(await call(world.app.url, 'POST', `/api/v1/daemons/${d.id}/sessions`, { auth: session }), 201);
  /** A host on the LAN as the daemon reports it in a Network run (a fixed id per name: runs name the same machine). */
  const hostIds: Record<string, string> = {};
  const postLanHost = async (name: string, ip: string) => {
    hostIds[name] ??= randomUUID();
    return postHost(d, hostReport(d, world.user.networkId, {
      hostId: hostIds[name], name, hostname: `${name}.lab`, interfaces: [{ subnet_id: lan.id, ip_address: ip }],
      ports: [{ number: 22 }], services: [{ name: 'SSH', ports: [22] }],
    }));
  };
  /** Two runs on the LAN: alpha and bravo, then alpha and delta (bravo gone, delta new). */
  async function twoRuns(report?: Record<string, unknown>) {
    await approveLan(); // queues the first scan
    const [first] = await requestWork();
    await postLanHost('alpha', '198.18.1.10');
    await postLanHost('bravo', '198.18.1.11');
    await update(first, { phase: 'Complete', progress: 100, finished_at: now() });
    await scanNow();
    const [second] = await requestWork();
    await postLanHost('alpha', '198.18.1.10');
    await postLanHost('delta', '198.18.1.13');
    await update(second, { phase: 'Complete', progress: 100, finished_at: now(), report: report ?? null });
  }

  const card = (page: Page) => page.locator(`article.daemon-card[data-daemon-id="${d.id}"]`);
  const openDaemons = async (viewport?: { width: number; height: number }) => {
    w = await openPage(world.browser, world.app.url, [], viewport);
    await signIn(w.page, world.app.url, world.user, '/daemons');
    await card(w.page).waitFor();
    return w.page;
  };

  it('waits for a target, approves a suggested subnet (which queues the first scan), shows the running session\'s progress, then the last run\'s summary and report', async () => {
    await agentOnTwoSubnets();
    const page = await openDaemons();
    const c = card(page);
    expect(await c.locator('h2').textContent()).to.equal('lab-agent');
    expect(await c.locator('.daemon-facts').textContent()).to.contain('reports to the server').and.contain('0.14.13');
    expect(await c.locator('.daemon-title .badge').textContent()).to.equal('running');
    expect(await c.locator('.targets.suggested code').allTextContents()).to.deep.equal(['198.18.1.0/24', '198.18.2.0/24']);
    expect(await c.locator('.targets.approved').count()).to.equal(0);
    // Nothing approved: nothing queued, and the page says what it waits for (not "nothing to scan").
    expect(await c.locator('.daemon-run .waiting').textContent()).to.contain('Waiting for a target to be approved');
    expect(await c.locator('.daemon-report').textContent()).to.contain('No network scan yet: waiting for a target to be approved.');
    expect(await c.getByRole('button', { name: 'Scan now' }).isDisabled()).to.equal(true);
    if (process.env.DAEMON_SHOTS) {
      for (const [width, height] of [[1440, 900], [390, 844]] as const) {
        await page.setViewportSize({ width, height });
        await page.evaluate(() => document.fonts.ready);
        await page.screenshot({ path: `${process.env.DAEMON_SHOTS}/daemons-waiting-${width}.png` });
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    }

    await c.getByRole('button', { name: 'Approve 198.18.1.0/24' }).click();
    await c.locator('.targets.approved code', { hasText: '198.18.1.0/24' }).waitFor();
    expect(await c.locator('.targets.suggested code').allTextContents()).to.deep.equal(['198.18.2.0/24']);
    const targets = expectOk(await call(world.app.url, 'GET', `/api/v1/daemons/${d.id}/targets`, { auth: session }));
    expect(targets.approved.map((t: any) => t.subnet_id)).to.deep.equal([lan.id]);
    // What the approval allows: SNMP public on, the raw printing ports off; the operator opts the subnet in to 9100–9107.
    const snmpPublic = c.getByRole('checkbox', { name: 'SNMP public' });
    const rawPorts = c.getByRole('checkbox', { name: 'Ports 9100–9107' });
    expect([await snmpPublic.isChecked(), await rawPorts.isChecked()]).to.deep.equal([true, false]);
    await rawPorts.check();
    await c.locator('.targets.approved input:checked').nth(1).waitFor();
    const optedIn = expectOk(await call(world.app.url, 'GET', `/api/v1/daemons/${d.id}/targets`, { auth: session }));
    expect(optedIn.approved[0]).to.include({ snmp_public: true, probe_raw_socket_ports: true });
    if (process.env.DAEMON_SHOTS) {
      for (const [width, height] of [[1440, 900], [390, 844]] as const) {
        await page.setViewportSize({ width, height });
        await page.screenshot({ path: `${process.env.DAEMON_SHOTS}/daemons-approved-${width}.png` });
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    }

    // The first approval queued the scan.
    await c.locator('.session[data-phase="Pending"]').waitFor();
    expect(await c.locator('.daemon-run .waiting').count()).to.equal(0);
    expect(await c.getByRole('button', { name: 'Scan now' }).isDisabled()).to.equal(true); // one network scan at a time
    const [queued] = await sessions();
    expect(queued).to.deep.include({ phase: 'Pending', discovery_type: { ...queued.discovery_type, type: 'Network', subnet_ids: null } });

    // The agent takes it (with the approved subnet) and reports progress; the page follows by itself.
    const [work] = await requestWork();
    expect(work.session_id).to.equal(queued.id);
    expect(work.discovery_type.subnet_ids).to.deep.equal([lan.id]);
    await update(work, { phase: 'Started', progress: 0, started_at: now() });
    await update(work, { phase: 'Scanning', progress: 40 });
    await c.locator('.session[data-phase="Scanning"] progress[value="40"]').waitFor();
    expect(await c.locator('.session .progress-text').textContent()).to.equal('40 %');

    await postLanHost('alpha', '198.18.1.10');
    await update(work, { phase: 'Complete', progress: 100, finished_at: now(), report: REPORT });
    await c.locator('.daemon-report dl.report').first().waitFor();
    expect(await c.locator('.session').count()).to.equal(0);
    expect(await c.locator('.run-outcome').textContent()).to.match(/^Network scan complete/);
    const field = (name: string) => c.locator(`.daemon-report dd[data-field="${name}"]`);
    expect(await field('hosts_found').textContent()).to.equal('1');
    expect(await field('hosts_new').textContent()).to.equal('1');
    expect(await c.locator('.host-links.new a').allTextContents()).to.deep.equal(['alpha', 'Show it in the hosts list']);
    expect(await field('addresses_tried').textContent()).to.equal('254');
    expect(await field('probes_sent').textContent()).to.equal('1790');
    expect(await field('alive_by_evidence').locator('li').allTextContents()).to.deep.equal(['kernel neighbour table7', 'an open port5', 'a refused connection (RST)2', 'udp_dns1']);
    expect(await field('services_by_rule').locator('li').allTextContents()).to.deep.equal(['http-title2', 'postgresql-ssl1', 'redis-ping1', 'ssh-banner1']);
    expect(await field('warnings').locator('li').allTextContents()).to.deep.equal(REPORT.warnings);
    expect(await field('incomplete').locator('li').allTextContents()).to.deep.equal(REPORT.incomplete);
    expect(await c.getByRole('button', { name: 'Scan now' }).isDisabled()).to.equal(false);
    expectNoProblems(w!);

    if (process.env.SCREENSHOTS) {
      // A second run at 40 %, beside the first one's report, at both sizes.
      await c.getByRole('button', { name: 'Scan now' }).click();
      const [next] = await requestWork();
      await update(next, { phase: 'Scanning', progress: 40, started_at: now() });
      await c.locator('.session progress[value="40"]').waitFor();
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.evaluate(() => document.fonts.ready);
      await page.screenshot({ path: `${DOCS}web-daemons.png` });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.evaluate(() => document.fonts.ready);
      expect(await pageWidth(page)).to.be.at.most(390);
      await page.screenshot({ path: `${DOCS}web-daemons-phone.png` });
    }
  });

  it('cancels a pending scan at once, and a running one once the agent answers (its next request-work says cancel)', async () => {
    await agentOnTwoSubnets();
    await approveLan(); // queues the first scan
    const page = await openDaemons();
    const c = card(page);

    // Pending: cancelled here and now, never handed out.
    await c.locator('.session[data-phase="Pending"]').waitFor();
    expect(await c.getByRole('button', { name: 'Scan now' }).isDisabled()).to.equal(true); // one network scan at a time
    await c.getByRole('button', { name: 'Cancel the network scan' }).click();
    await c.locator('.run-outcome', { hasText: 'Network scan cancelled' }).waitFor();
    expect(await c.locator('.session').count()).to.equal(0);
    expect(await requestWork()).to.deep.equal([null, false]);

    // Running: asked to stop; the agent learns it from request-work and ends the session.
    await c.getByRole('button', { name: 'Scan now' }).click();
    await c.locator('.session[data-phase="Pending"]').waitFor();
    const [work] = await requestWork();
    await update(work, { phase: 'Scanning', progress: 10, started_at: now() });
    await c.locator('.session[data-phase="Scanning"]').waitFor();
    await c.getByRole('button', { name: 'Cancel the network scan' }).click();
    await c.locator('.session', { hasText: 'cancelling…' }).waitFor();
    expect(await c.getByRole('button', { name: 'Cancel the network scan' }).count()).to.equal(0);
    expect(await requestWork()).to.deep.equal([null, true]);
    await update(work, { phase: 'Cancelled', progress: 10, finished_at: now() });
    await waitFor('the cancelled run shown as the last one', async () => (await c.locator('.session').count()) === 0
      && (await c.locator('.run-outcome').textContent())!.startsWith('Network scan cancelled'));
    expect((await sessions())[0]).to.include({ id: work.session_id, phase: 'Cancelled' });

    // Revoked, the subnet is a suggestion again.
    await c.getByRole('button', { name: 'Revoke 198.18.1.0/24' }).click();
    await c.locator('.targets.suggested code', { hasText: '198.18.1.0/24' }).waitFor();
    expect(await c.locator('.targets.approved').count()).to.equal(0);
    expect(expectOk(await call(world.app.url, 'GET', `/api/v1/daemons/${d.id}/targets`, { auth: session })).approved).to.deep.equal([]);
    expectNoProblems(w!);
  });

  it('a Viewer sees the agent, its targets, the running session and the last run, with no button to change them', async () => {
    await agentOnTwoSubnets();
    await approveLan(); // queues the first scan
    const [work] = await requestWork();
    await update(work, { phase: 'Complete', progress: 100, finished_at: now(), report: REPORT });
    expectOk(await call(world.app.url, 'POST', `/api/v1/daemons/${d.id}/sessions`, { auth: session }), 201);
    const [running] = await requestWork();
    await update(running, { phase: 'Scanning', progress: 70, started_at: now() });
    const viewer = { email: `viewer-${d.id.slice(0, 8)}@example.test`, password: world.user.password };
    expectOk(await call(world.app.url, 'POST', '/api/v1/users', { auth: session, body: { ...viewer, permissions: 'Viewer', network_ids: [world.user.networkId] } }), 201);

    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, viewer, '/daemons');
    const c = card(w.page);
    await c.locator('.session progress[value="70"]').waitFor();
    expect(await c.locator('.targets.approved code').allTextContents()).to.deep.equal(['198.18.1.0/24']);
    expect(await c.locator('.daemon-report dd[data-field="addresses_tried"]').textContent()).to.equal('254');
    expect(await w.page.locator('#outlet button').count()).to.equal(0); // no Approve, Revoke, Scan now, Cancel, nor Create key
    expect(await c.locator('.targets.approved input[type=checkbox]:not([disabled])').count()).to.equal(0); // the options are shown, not changeable
    expectNoProblems(w);
  });

  it('a run\'s summary counts new, unchanged and gone hosts; a new or gone host opens on the map, and all of them in the hosts list', async () => {
    await agentOnTwoSubnets();
    await twoRuns(REPORT);
    const page = await openDaemons();
    const c = card(page);
    await c.locator('.daemon-report dl.summary').waitFor();
    const field = (name: string) => c.locator(`.daemon-report dd[data-field="${name}"]`);
    const counts = Object.fromEntries(await Promise.all(['hosts_found', 'hosts_new', 'hosts_changed', 'hosts_unchanged', 'hosts_gone', 'services_found']
      .map(async (f) => [f, await field(f).textContent()])));
    expect(counts).to.deep.equal({ hosts_found: '2', hosts_new: '1', hosts_changed: '0', hosts_unchanged: '1', hosts_gone: '1', services_found: '2' });
    expect(await c.locator('.host-links.new .part-label').textContent()).to.contain('New hosts (1)');
    expect(await c.locator('.host-links.new ul a').allTextContents()).to.deep.equal(['delta']);
    expect(await c.locator('.host-links.gone .part-label').textContent()).to.contain('Gone since the last run (1)');
    expect(await c.locator('.host-links.gone ul a').allTextContents()).to.deep.equal(['bravo']);
    expect(await c.locator('.no-report').count()).to.equal(0); // the agent's report is there too
    expectNoProblems(w!);

    if (process.env.DAEMON_SHOTS) {
      for (const [width, height, name] of [[1440, 900, 'daemons-report-1440.png'], [390, 844, 'daemons-report-390.png']] as const) {
        await page.setViewportSize({ width, height });
        await page.evaluate(() => document.fonts.ready);
        expect(await pageWidth(page)).to.be.at.most(width);
        await page.screenshot({ path: `${process.env.DAEMON_SHOTS}/${name}` });
        await c.locator('.daemon-report .host-links.gone').scrollIntoViewIfNeeded();
        await page.screenshot({ path: `${process.env.DAEMON_SHOTS}/${name.replace('.png', '-scrolled.png')}` });
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    }

    // The gone host opens on the map, its details in the panel.
    await c.getByRole('link', { name: 'bravo on the map' }).click();
    await page.waitForURL(`**/networks/${world.user.networkId}/topology?focus=${hostIds.bravo}`);
    await waitForMap(page);
    await page.locator('#details article[aria-label="Host bravo"]').waitFor();

    // Back on the Daemons page, the new ones in the hosts list.
    await page.goBack();
    await card(page).getByRole('link', { name: 'Show it in the hosts list' }).first().click();
    await page.waitForURL(/\/hosts\?/);
    expect(new URL(page.url()).searchParams.get('ids')).to.equal(hostIds.delta);
    await page.locator('#outlet table.list tbody tr').first().waitFor();
    expect(await page.locator('#outlet table.list tbody td:first-child a').allTextContents()).to.deep.equal(['delta']);
    expect(await page.locator('.ids-filter').textContent()).to.contain('Only the host the link names');
    await page.getByRole('link', { name: 'Show all hosts' }).click();
    await waitFor('every host listed', async () => (await page.locator('#outlet table.list tbody tr').count()) === 4); // the agent's own, alpha, bravo, delta
    expectNoProblems(w!);
  });

  it('an agent that stopped asking for work is "not running", with when it was last seen; its failed run speaks of the NetInventory agent', async () => {
    await agentOnTwoSubnets(AGENT_VERSION);
    await approveLan();
    const [work] = await requestWork();
    await postLanHost('alpha', '198.18.1.10');
    await update(work, { phase: 'Scanning', progress: 30, started_at: now() });
    expectOk(await d.post(`/api/daemons/${d.id}/startup`, { daemon_version: AGENT_VERSION })); // killed and started again: the run fails
    await sql(world.app, `update daemons set last_seen = now() - interval '3 hours' where id = ?`, [d.id]); // it ran --once and exited
    const page = await openDaemons();
    const c = card(page);
    expect(await c.locator('.daemon-title .badge').textContent()).to.equal('not running');
    const stale = (await c.locator('.notice.stale').textContent())!;
    expect(stale).to.contain('Not running: the NetInventory agent has not asked for work since').and.contain('(3 hours ago)').and.contain('--once');
    expect(await c.locator('.daemon-facts').textContent()).to.contain('last seen');
    expect(await c.locator('.run-error').textContent()).to.equal(
      'The NetInventory agent’s run failed: Stalled: the NetInventory agent restarted during the session (it was stopped or killed before the run ended)');
    expect(await c.locator('.no-report').textContent()).to.equal('No report: the NetInventory agent’s run ended before it sent one.');
    expect(await c.locator('.daemon-report').textContent()).to.not.contain('Scanopy');
    expect(await c.locator('.daemon-report dd[data-field="hosts_found"]').textContent()).to.equal('1');
    expect(await c.locator('.daemon-report dd[data-field="hosts_gone"]').textContent()).to.equal('not counted: the run did not complete');
    expectNoProblems(w!);
    if (process.env.DAEMON_SHOTS) {
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.evaluate(() => document.fonts.ready);
      await page.screenshot({ path: `${process.env.DAEMON_SHOTS}/daemons-stale-failed-1440.png` });
    }
  });

  it('the empty map, the empty hosts list and the Daemons page say how to start an agent; a key made there fills in the install block', async () => {
    const origin = new URL(world.app.url).origin;
    w = await openPage(world.browser, world.app.url, [], { width: 390, height: 844 });
    const page = w.page;
    await signIn(page, world.app.url, world.user, `/networks/${world.user.networkId}/topology`);
    await waitForMap(page);
    const steps = page.locator('#host-list .empty-map');
    await steps.waitFor({ state: 'attached' });
    // Seen, not only in the page: on a phone the host list is a sheet, opened for an empty network.
    await steps.waitFor({ state: 'visible' });
    expect(await steps.textContent()).to.contain('Create a daemon key on the Daemons page').and.contain('POST /api/v1/auth/daemon')
      .and.contain('Install the agent on a machine inside the network').and.contain('Approve a subnet');
    expect(await steps.textContent(), 'no checkout of this repository is needed').to.not.contain('npm run agent');
    expect(await pageWidth(page)).to.be.at.most(390);

    await page.goto(`${world.app.url}/hosts`);
    const hosts = page.locator('#outlet .agent-steps');
    await hosts.waitFor();
    await hosts.getByRole('link', { name: 'Daemons page' }).first().click();
    const empty = page.locator('.empty-daemons');
    await empty.waitFor();
    expect(await empty.textContent()).to.contain('Create a daemon key (New daemon key, above; or POST /api/v1/auth/daemon).');
    expect(await pageWidth(page)).to.be.at.most(390);

    await page.getByRole('button', { name: 'Create key' }).click();
    const run = page.locator('#agent-run');
    await run.waitFor();
    // The browser came by 127.0.0.1: the commands say so, and warn that another machine cannot use it.
    expect(await page.locator('#agent-loopback-warning').textContent()).to.contain(`${origin} is this server’s own loopback address`).and.contain('PUBLIC_URL');
    expect(await run.textContent()).to.equal(`./netinventory-agent --server ${origin} --key-file agent.key`);
    expect(await page.locator('#agent-download').textContent()).to.contain(`${origin}/downloads/netinventory-agent-linux-x64`);
    const keyFile = (await page.locator('#agent-key-file').textContent())!;
    const key = /'(scp_d_[0-9A-Za-z]{32})'/.exec(keyFile)?.[1];
    expect(key, keyFile).to.be.a('string');
    expect(await page.locator('.install-block').textContent(), 'the key is only in the key file').to.not.contain(`--key ${key}`);
    // Another machine: the JavaScript build runs with node; the systemd unit and the container recipe are there.
    await page.selectOption('#agent-machine', 'netinventory-agent.cjs');
    expect(await run.textContent()).to.equal(`node ./netinventory-agent.cjs --server ${origin} --key-file agent.key`);
    expect(await page.locator('#agent-systemd').textContent({ timeout: 1000 })).to.contain('LoadCredential=agent-key:/etc/netinventory-agent/agent.key');
    expect(await page.locator('#agent-container').textContent()).to.contain('docker run');
    await empty.filter({ hasText: 'it appears here once it registers' }).waitFor(); // the generic steps give way to the key's own commands
    const keys = expectOk(await call(world.app.url, 'GET', '/api/v1/auth/daemon', { auth: session })) as any[];
    expect(keys.map((k) => k.name)).to.deep.equal(['discovery agent']);
    expect(await pageWidth(page)).to.be.at.most(390);
    if (process.env.DAEMON_SHOTS) {
      await page.evaluate(() => document.fonts.ready);
      await page.screenshot({ path: `${process.env.DAEMON_SHOTS}/daemons-install-390.png`, fullPage: true });
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.screenshot({ path: `${process.env.DAEMON_SHOTS}/daemons-install-1440.png`, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
    }
    // The key works: an agent started with it registers and appears on the page.
    const agent = daemonClient(world.app.url, key!);
    await registerDaemon(agent, world.user.networkId, { name: 'new-agent' });
    await page.locator(`article.daemon-card[data-daemon-id="${agent.id}"]`).waitFor({ timeout: 20_000 }); // the idle poll (10 s) finds it
    expect(await pageWidth(page)).to.be.at.most(390);
    expectNoProblems(w);
  });
});
