// Online, offline, stale and ignored hosts in the web app (issue 39.2), in real headless Chromium
// against a real app: a daemon's completed scan that missed two hosts marks them offline; one is
// then offline for longer than the network's expiry (stale) and a person ignores another. The hosts
// list shows a Status column and filters by status (kept in the address); the map greys the offline
// hosts' nodes, outlines the one the last scan found new, and counts both in its header; a host's
// page says its status.
// SCREENSHOTS=1 writes docs/web-host-status.png and docs/web-map-offline.png (1440×900) and their
// -phone twins (390×844).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { expectNoProblems, mapSnapshot, openPage, signIn, waitForMap, webWorld, type WatchedPage } from './browser.js';
import { createDaemonKey, daemonClient, registerDaemon, sql } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { call, expectOk } from '../support/client.js';
import { login } from '../support/world.js';
import { waitFor } from '../workers/support.js';

const DOCS = 'docs/';
const HOSTS = [['web', '10.4.0.10'], ['db', '10.4.0.11'], ['printer', '10.4.0.12'], ['old-nas', '10.4.0.13'], ['guest-phone', '10.4.0.14'], ['camera', '10.4.0.15']] as const;

describe('web: online, offline, stale and ignored hosts', function () {
  this.timeout(90_000);
  const ids = new Map<string, string>();
  const world = webWorld({
    perFile: true,
    ready: async ({ app, user }) => {
      const net = user.networkId;
      const owner = await login(app.url, user.email, user.password);
      const d = daemonClient(app.url, (await createDaemonKey(app.url, owner, net)).key);
      await registerDaemon(d, net);
      const lan = await postSubnet(d, net, '10.4.0.0/24');
      const type = { type: 'Network', subnet_ids: [lan.id], host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false };
      const session = async (names: readonly string[]) => {
        const id = randomUUID();
        const update = { session_id: id, daemon_id: d.id, network_id: net, phase: 'Scanning', discovery_type: type, progress: 10, error: null, started_at: new Date().toISOString(), finished_at: null };
        expectOk(await d.post(`/api/v1/discovery/${id}/update`, update));
        for (const [name, ip] of HOSTS.filter(([n]) => names.includes(n))) {
          const stored = await postHost(d, hostReport(d, net, { hostId: ids.get(name) ?? randomUUID(), name, hostname: null, interfaces: [{ subnet_id: lan.id, ip_address: ip }], ports: [{ number: 22 }], services: [{ name: 'SSH', ports: [22] }] }));
          ids.set(name, stored.id);
        }
        expectOk(await d.post(`/api/v1/discovery/${id}/update`, { ...update, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
      };
      await session(HOSTS.map(([n]) => n).filter((n) => n !== 'camera'));
      await session(['web', 'db', 'guest-phone', 'camera']); // printer and old-nas missed, camera new
      await sql(app, `update hosts set offline_at = now() - interval '45 days' where id = ?`, [ids.get('old-nas')]);
      expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${ids.get('guest-phone')}`, { auth: owner, body: { ignored: true } }));
    },
  });
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  /** "name | status" per row of the hosts list. */
  const rows = (page: Page) => page.$$eval('table.list tbody tr', (trs) => trs.map((tr) => `${tr.querySelector('td a')!.textContent} | ${tr.querySelector('td.status')!.textContent}`));

  for (const [width, height, suffix] of [[1440, 900, ''], [390, 844, '-phone']] as const) {
    it(`the hosts list shows each host's status and filters by it; the map greys offline hosts and counts them (${width} px)`, async () => {
      w = await openPage(world.browser, world.app.url, [], { width, height });
      const { page } = w;
      await signIn(page, world.app.url, world.user, '/hosts');
      await waitFor('the hosts listed', async () => (await rows(page)).length === HOSTS.length + 1); // and the daemon's own host
      expect((await rows(page)).filter((r) => !r.startsWith('scanopy-daemon')).sort()).to.deep.equal(
        ['camera | Online', 'db | Online', 'guest-phone | Ignored', 'old-nas | Stale', 'printer | Offline', 'web | Online']);
      if (process.env.SCREENSHOTS) await page.screenshot({ path: `${DOCS}web-host-status${suffix}.png`, fullPage: true });
      await page.selectOption('#hosts-status', 'offline');
      await waitFor('only the offline host', async () => JSON.stringify(await rows(page)) === JSON.stringify(['printer | Offline']));
      expect(new URL(page.url()).searchParams.get('status')).to.equal('offline');

      await page.goto(`${world.app.url}/`);
      await waitForMap(page);
      await waitFor('the header counts the new and the offline hosts', async () => /1 new host, 2 hosts offline/.test((await page.textContent('.status')) ?? ''));
      const nodes = await mapSnapshot(page);
      const of = (name: string) => Object.values(nodes).filter((n) => (n.label ?? '').startsWith(name));
      expect(of('printer').length).to.be.above(0);
      expect(of('printer').every((n) => n.classes.includes('offline'))).to.equal(true);
      expect(of('old-nas').every((n) => n.classes.includes('offline'))).to.equal(true);
      expect(of('web').some((n) => n.classes.includes('offline') || n.classes.includes('new'))).to.equal(false);
      expect(of('camera').length).to.be.above(0);
      expect(of('camera').every((n) => n.classes.includes('new')), 'the last scan found camera new').to.equal(true);
      if (process.env.SCREENSHOTS) await page.screenshot({ path: `${DOCS}web-map-offline${suffix}.png` });
      expectNoProblems(w);
    });
  }

  it('a host\'s page says its status: offline since when, stale, ignored, online', async () => {
    w = await openPage(world.browser, world.app.url, [], { width: 390, height: 844 });
    const { page } = w;
    const statusOf = async (name: string, open = true) => {
      if (open) await page.goto(`${world.app.url}/hosts/${ids.get(name)}`);
      await page.locator(`article.host-details[aria-label="Host ${name}"] dd.host-status`).waitFor();
      return [await page.locator('dd.host-status .badge').textContent(), await page.locator('dd.host-status').textContent()] as const;
    };
    await signIn(page, world.app.url, world.user, `/hosts/${ids.get('printer')}`);
    const [printer, printerLine] = await statusOf('printer', false); // (signed in, the page opens by itself)
    expect(printer).to.equal('Offline');
    expect(printerLine).to.match(/^Offline not seen by a scan since .+/);
    expect((await statusOf('old-nas'))[0]).to.equal('Stale');
    expect((await statusOf('guest-phone'))[0]).to.equal('Ignored');
    expect(await statusOf('web')).to.deep.equal(['Online', 'Online']);
    expectNoProblems(w);
  });

  it('a host\'s page says which of its addresses, ports and services a scan no longer saw', async () => {
    // As a scan that no longer found web's SSH would leave it (test/discovery/stopped.spec.ts makes it so through ingest).
    await sql(world.app, `update services set offline_at = now() where host_id = ?`, [ids.get('web')]);
    await sql(world.app, `update ports set offline_at = now() where host_id = ?`, [ids.get('web')]);
    w = await openPage(world.browser, world.app.url, [], { width: 1440, height: 900 });
    const { page } = w;
    await signIn(page, world.app.url, world.user, `/hosts/${ids.get('web')}`);
    const section = (title: string) => page.locator('article.host-details section', { has: page.locator('h3', { hasText: title }) });
    await section('Services').locator('tbody tr').first().waitFor();
    expect(await section('Services').locator('tbody tr td:last-child').allTextContents()).to.satisfy((cells: string[]) => cells.length === 1 && /^offline since /.test(cells[0]!));
    expect(await section('Ports').locator('tbody tr td:last-child').allTextContents()).to.satisfy((cells: string[]) => cells.length === 1 && /^offline since /.test(cells[0]!));
    expect(await section('IP addresses').locator('tbody tr td:last-child').allTextContents()).to.deep.equal(['online']);
    expectNoProblems(w);
  });
});
