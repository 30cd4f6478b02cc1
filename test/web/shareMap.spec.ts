// "Share…" on the map in real Chromium, at 1440x900 and on a phone (390x844, behind More): an Owner
// creates a read-only link to the view shown (and the instant shown, when the map is fixed at one),
// chooses its expiry, sees it once with Copy and where to revoke it; the link opened in a fresh
// browser context (nobody signed in) shows the same view. A Viewer has no Share.
// SCREENSHOTS=1 writes docs/web-share-map.png and docs/web-share-map-phone.png.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { call, expectOk } from '../support/client.js';
import { waitFor } from '../workers/support.js';
import { login } from '../support/world.js';
import { expectNoProblems, mapSnapshot, openPage, signIn, waitForMap, webWorld, type WatchedPage } from './browser.js';

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const DAY = 86_400_000;

describe('web map: Share… (Chromium)', function () {
  this.timeout(120_000);
  let owner: Awaited<ReturnType<typeof login>>;
  const world = webWorld({
    perFile: true,
    ready: async ({ app, user }) => {
      owner = await login(app.url, user.email, user.password);
      const post = async (path: string, body: unknown) => expectOk(await call(app.url, 'POST', path, { auth: owner, body }), 201);
      const subnet = await post('/api/v1/subnets', { cidr: '10.9.0.0/24', name: 'lan', network_id: user.networkId });
      for (const [name, ip] of [['web-01', '10.9.0.5'], ['db-01', '10.9.0.6']]) {
        const host = await post('/api/v1/hosts', { name, network_id: user.networkId });
        await post('/api/v1/ip-addresses', { host_id: host.id, subnet_id: subnet.id, ip_address: ip });
        // A service: the Workloads view is offered.
        await post('/api/v1/services', { host_id: host.id, name: `${name} app`, service_definition: 'Custom' });
      }
    },
  });
  const pages: WatchedPage[] = [];
  afterEach(async () => {
    for (const w of pages.splice(0)) await w.close();
  });
  const links = async () => expectOk(await call(world.app.url, 'GET', `/api/v1/networks/${world.user.networkId}/share-links`, { auth: owner })) as Array<{ id: string; label: string; view: string; at: string | null; expires_at: string }>;

  async function openMap(viewport: { width: number; height: number }, path: string, user: { email: string; password: string } = world.user): Promise<Page> {
    const w = await openPage(world.browser, world.app.url, [], viewport);
    pages.push(w);
    await signIn(w.page, world.app.url, user, path);
    await waitForMap(w.page);
    return w.page;
  }

  /** Share… → the form filled → Create link: the link shown (and the dialog left open for a screenshot). */
  async function share(page: Page, label: string, days: string, fixed?: boolean): Promise<string> {
    await page.click('#share-map');
    await page.waitForSelector('dialog[open] button[type=submit]');
    expect(await page.textContent('#share-map-intro')).to.contain('read-only');
    await page.fill('dialog[open] input[name=label]', label);
    await page.selectOption('dialog[open] select[name=days]', days);
    const box = page.locator('dialog[open] input[name=fixed]');
    expect(await box.count(), 'an instant to fix only when the map shows one').to.equal(fixed === undefined ? 0 : 1);
    if (fixed !== undefined) {
      expect(await box.isChecked(), 'the instant shown, by default').to.equal(true);
      if (!fixed) await box.uncheck();
    }
    await page.click('dialog[open] button[type=submit]');
    await page.waitForSelector('#share-map-url');
    expect(await page.textContent('#share-map-revoke')).to.contain('revoked on the network’s page');
    expect(await page.textContent('dialog[open]')).to.match(/works until (?!—)/);
    return page.inputValue('#share-map-url');
  }

  /** The link in a new browser context (no session): what it draws, and its status line. */
  async function opened(url: string, viewport: { width: number; height: number }) {
    const w = await openPage(world.browser, world.app.url, [], viewport);
    pages.push(w);
    await w.page.goto(url);
    await w.page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 20_000 });
    expectNoProblems(w);
    return { nodes: Number(await w.page.getAttribute('#map-canvas', 'data-nodes')), status: (await w.page.textContent('.status')) ?? '' };
  }

  it('at 1440 px: Share… in the toolbar makes a link to the view shown, for the days chosen; opened elsewhere it draws that view, live', async () => {
    const page = await openMap(DESKTOP, `/networks/${world.user.networkId}/topology?view=workloads`);
    expect(await page.isVisible('#share-map')).to.equal(true);
    expect(await page.inputValue('#view')).to.equal('workloads');
    const url = await share(page, 'wall screen', '7');
    expect(url).to.match(new RegExp(`^${world.app.url}/share/[^/]+$`));
    if (process.env.SCREENSHOTS) await page.screenshot({ path: 'docs/web-share-map.png' });
    // Copy: the link on the clipboard.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: world.app.url });
    await page.click('#share-map-copy');
    await waitFor('copied', async () => (await page.textContent('#share-map-copied')) === 'Copied.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(url);
    const link = (await links()).find((l) => l.label === 'wall screen')!;
    expect([link.view, link.at]).to.deep.equal(['workloads', null]);
    const expires = Date.parse(link.expires_at) - Date.now();
    expect(expires).to.be.within(6 * DAY, 7 * DAY);

    const drawn = Object.values(await mapSnapshot(page)).length;
    const shared = await opened(url, DESKTOP);
    expect(shared.status).to.match(/^Live, as of .* · workloads view ·/);
    expect(shared.nodes).to.equal(drawn);
  });

  it('at 390 px: Share… behind More; a map fixed at an instant shares that instant (or, unticked, the live map)', async () => {
    const at = new Date().toISOString();
    const page = await openMap(PHONE, `/networks/${world.user.networkId}/topology?view=l3&at=${encodeURIComponent(at)}`);
    expect(await page.isVisible('#share-map')).to.equal(false);
    await page.click('#map-more-button');
    const url = await share(page, 'as it was', '1', true);
    if (process.env.SCREENSHOTS) await page.screenshot({ path: 'docs/web-share-map-phone.png' });
    const link = (await links()).find((l) => l.label === 'as it was')!;
    expect([link.view, link.at && Date.parse(link.at)]).to.deep.equal(['l3', Date.parse(at)]);
    expect(Date.parse(link.expires_at) - Date.now()).to.be.within(0, DAY);
    const drawn = Object.values(await mapSnapshot(page)).length;
    const shared = await opened(url, PHONE);
    expect(shared.status).to.match(/^As of .* · l3 view ·/);
    expect(shared.nodes).to.equal(drawn);

    await page.click('#share-map-close');
    await share(page, 'live after all', '30', false);
    expect((await links()).find((l) => l.label === 'live after all')?.at).to.equal(null);
  });

  it('a Viewer has no Share…, at 1440 px nor behind More at 390 px', async () => {
    const viewer = { email: `viewer-share-${Date.now()}@example.test`, password: world.user.password };
    expectOk(await call(world.app.url, 'POST', '/api/v1/users', { auth: owner, body: { ...viewer, permissions: 'Viewer', network_ids: [world.user.networkId] } }), 201);
    const wide = await openMap(DESKTOP, `/networks/${world.user.networkId}/topology`, viewer);
    expect(await wide.locator('#export-menu').isVisible()).to.equal(true);
    expect(await wide.locator('#share-map').count()).to.equal(0);
    const phone = await openMap(PHONE, `/networks/${world.user.networkId}/topology`, viewer);
    await phone.click('#map-more-button');
    expect(await phone.locator('#export-menu').isVisible()).to.equal(true);
    expect(await phone.locator('#share-map').count()).to.equal(0);
  });
});
