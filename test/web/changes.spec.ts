// The Changes page (issue 39.4) in real headless Chromium against a real app: three scans of a
// daemon (the second misses a host, changes one and finds a new one; the third brings the missed
// one back) are listed newest first with their new, offline, back-online and changed hosts, each a
// link; Compare opens the map's diff over the scan; Acknowledge marks the scan, and "Not
// acknowledged only" leaves it out.
// SCREENSHOTS=1 writes docs/web-changes.png (1440×900) and docs/web-changes-phone.png (390×844).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { expectNoProblems, openPage, signIn, webWorld, type WatchedPage } from './browser.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { expectOk } from '../support/client.js';
import { login } from '../support/world.js';
import { waitFor } from '../workers/support.js';

const DOCS = 'docs/';

describe('web: the Changes page', function () {
  this.timeout(90_000);
  const world = webWorld({
    ready: async ({ app, user }) => {
      const net = user.networkId;
      const d = daemonClient(app.url, (await createDaemonKey(app.url, await login(app.url, user.email, user.password), net)).key);
      await registerDaemon(d, net);
      const lan = await postSubnet(d, net, '10.5.0.0/24');
      const ids: Record<string, string> = { nas: randomUUID(), printer: randomUUID(), laptop: randomUUID(), camera: randomUUID() };
      const run = async (hosts: Array<[string, string, number]>) => {
        const id = randomUUID();
        const type = { type: 'Network', subnet_ids: [lan.id], host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false };
        const update = { session_id: id, daemon_id: d.id, network_id: net, phase: 'Scanning', discovery_type: type, progress: 10, error: null, started_at: new Date().toISOString(), finished_at: null };
        expectOk(await d.post(`/api/v1/discovery/${id}/update`, update));
        for (const [name, ip, port] of hosts) {
          await postHost(d, hostReport(d, net, { hostId: ids[name], name, hostname: null, interfaces: [{ subnet_id: lan.id, ip_address: ip }], ports: [{ number: port }], services: [{ name: 'HTTP', ports: [port] }] }));
        }
        expectOk(await d.post(`/api/v1/discovery/${id}/update`, { ...update, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
      };
      await run([['nas', '10.5.0.10', 5000], ['printer', '10.5.0.11', 80], ['laptop', '10.5.0.12', 22]]);
      await run([['nas', '10.5.0.10', 5001], ['laptop', '10.5.0.12', 22], ['camera', '10.5.0.13', 554]]);
      await run([['nas', '10.5.0.10', 5001], ['printer', '10.5.0.11', 80], ['laptop', '10.5.0.12', 22], ['camera', '10.5.0.13', 554]]);
    },
  });
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  /** Each scan card's change lines, "New 1: camera", newest scan first. */
  const cards = (page: Page) => page.$$eval('article.scan', (arts) => arts.map((a) => [...a.querySelectorAll('ul.changes li')].map((li) => li.textContent!.replace(/\s+/g, ' ').trim().replace(/^(\D+ \d+) /, '$1: '))));

  for (const [width, height, suffix] of [[1440, 900, ''], [390, 844, '-phone']] as const) {
    it(`lists each scan's changes newest first, compares and acknowledges (${width} px)`, async () => {
      w = await openPage(world.browser, world.app.url, [], { width, height });
      const { page } = w;
      await signIn(page, world.app.url, world.user, '/changes');
      await waitFor('three scans listed', async () => (await page.$$('article.scan')).length === 3);
      const [third, second, first] = await cards(page);
      expect(second).to.deep.equal(['New 1: camera', 'Offline 1: printer', 'Changed 1: nas']);
      expect(third).to.deep.equal(['Back online 1: printer']);
      expect(first).to.deep.equal(['New 3: laptop, nas, printer']);
      if (process.env.SCREENSHOTS) await page.screenshot({ path: `${DOCS}web-changes${suffix}.png`, fullPage: true });
      if (width !== 1440) return expectNoProblems(w);

      // Acknowledge the second scan; the filter then leaves it out.
      const secondCard = page.locator('article.scan').nth(1);
      await secondCard.getByRole('button', { name: 'Acknowledge' }).click();
      await secondCard.locator('.acknowledged').first().waitFor();
      await page.check('#changes-open');
      await waitFor('only the unacknowledged scans', async () => (await page.$$('article.scan')).length === 2);
      expect(new URL(page.url()).searchParams.get('unacknowledged')).to.equal('true');
      // Compare opens the map's diff over that scan.
      await page.locator('article.scan').first().getByRole('link', { name: 'Compare' }).click();
      await waitFor('the diff page', async () => /\/topology\/diff$/.test(new URL(page.url()).pathname));
      expect(new URL(page.url()).searchParams.get('from')).to.match(/^\d{4}-/);
      expectNoProblems(w);
    });
  }
});
