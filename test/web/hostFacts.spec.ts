// What discovery says a host is (issue 38.3: device type and model, OS and version with its
// confidence, the MAC's vendor) in the web app, in real headless Chromium against a real app: the
// hosts list shows it in one cell (the MAC vendor in a column beside it) and filters by device type (exact) and OS (prefix) through the
// API's ?device_type= and ?os=, kept in the address; a host's details show it all. The fields are
// read-only in the user API: a daemon reports them (POST /api/v1/hosts/discovery).
// SCREENSHOTS=1 writes docs/web-host-facts.png and docs/web-host-facts-details.png (1440×900), and
// docs/web-host-facts-phone.png and docs/web-host-facts-details-phone.png (390×844).
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { expectNoProblems, openPage, pageWidth, signIn, webWorld, type WatchedPage } from './browser.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { login } from '../support/world.js';
import { waitFor } from '../workers/support.js';

const DOCS = 'docs/';

interface Seeded { name: string; ip: string; mac?: string; vendor?: string; facts?: Record<string, string | null> }
const HOSTS: Seeded[] = [
  { name: 'office-printer', ip: '10.3.0.20', mac: '3C:2A:F4:00:00:20', vendor: 'Hewlett Packard', facts: { device_type: 'Printer', device_model: 'HP Color LaserJet Pro MFP M479fdw', os_name: 'Debian Linux', os_version: '12', os_confidence: 'Medium' } },
  { name: 'storage', ip: '10.3.0.30', mac: '00:11:32:00:00:30', vendor: 'Synology Incorporated', facts: { device_type: 'NAS', device_model: 'Synology DiskStation DS920+', os_name: 'Linux', os_version: '4.4.302', os_confidence: 'High' } },
  { name: 'gateway', ip: '10.3.0.1', mac: '48:8F:5A:00:00:01', vendor: 'Routerboard.com', facts: { device_type: 'Router', device_model: 'MikroTik RB4011', os_name: 'RouterOS', os_version: '7.14', os_confidence: 'Certain' } },
  { name: 'door-cam', ip: '10.3.0.40', facts: { device_type: 'Camera', device_model: 'Hikvision camera', os_name: null, os_version: null, os_confidence: null } },
  { name: 'laptop', ip: '10.3.0.50' },
];
/** Every host listed: the seeded ones and the daemon's own (its registration reports it). */
const ALL = [...HOSTS.map((s) => s.name), 'scanopy-daemon'];

describe('web: what discovery says a host is (device, OS, MAC vendor)', function () {
  this.timeout(60_000);
  const ids = new Map<string, string>();
  const world = webWorld({
    perFile: true,
    ready: async ({ app, user }) => {
      const net = user.networkId;
      const d = daemonClient(app.url, (await createDaemonKey(app.url, await login(app.url, user.email, user.password), net)).key);
      await registerDaemon(d, net);
      const lan = await postSubnet(d, net, '10.3.0.0/24');
      for (const s of HOSTS) {
        const r = hostReport(d, net, { name: s.name, hostname: null, interfaces: [{ subnet_id: lan.id, ip_address: s.ip, mac_address: s.mac ?? null }] });
        const report = { ...r, host: { ...r.host, ...s.facts }, interfaces: r.interfaces.map((i) => ({ ...i, mac_vendor: s.vendor ?? null })) };
        ids.set(s.name, (await postHost(d, report)).id);
      }
    },
  });
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  /** The list's rows as "name | device · OS cell", in the list's order. */
  const rows = (page: Page) => page.$$eval('table.list tbody tr', (trs) => trs.map((tr) => {
    const cells = [...tr.querySelectorAll('td')];
    const facts = tr.querySelector('td.facts')!;
    const lines = facts.querySelector('.host-facts') ? [...facts.querySelectorAll('.host-facts > div')].map((d) => d.textContent!.trim()) : [facts.textContent!.trim()];
    return `${cells[0]!.querySelector('a')!.textContent} | ${lines.join(' / ')}`;
  }));
  const listed = async (page: Page, names: string[]) => {
    const want = JSON.stringify([...names].sort());
    let seen: string[] = [];
    await waitFor(`the hosts list to be ${names.join(', ')}`, async () => JSON.stringify((seen = (await rows(page)).map((r) => r.split(' | ')[0]!)).sort()) === want)
      .catch((err: Error) => { throw new Error(`${err.message} (it is ${seen.join(', ')})`); });
  };

  it('the hosts list shows each host\'s device and OS, filters by device type and by OS (kept in the address), and a device type links to its filter', async () => {
    w = await openPage(world.browser, world.app.url, [], { width: 1440, height: 900 });
    const { page } = w;
    await signIn(page, world.app.url, world.user, '/hosts');
    await listed(page, ALL);
    expect(await page.$$eval('table.list thead th', (ths) => ths.map((t) => t.textContent))).to.include('Device · OS');
    expect((await rows(page)).sort()).to.deep.equal([
      'door-cam | Camera · Hikvision camera',
      'gateway | Router · MikroTik RB4011 / RouterOS 7.14',
      'laptop | —',
      'office-printer | Printer · HP Color LaserJet Pro MFP M479fdw / Debian Linux 12',
      'scanopy-daemon | —',
      'storage | NAS · Synology DiskStation DS920+ / Linux 4.4.302',
    ]);
    // The MAC vendor beside them (a column of its own), and the status.
    const vendorOf = async (name: string) => page.locator('table.list tbody tr', { has: page.locator('td:first-child a', { hasText: new RegExp(`^${name}$`) }) }).locator('td.vendor').textContent();
    expect(await page.$$eval('table.list thead th', (ths) => ths.map((t) => t.textContent))).to.include.members(['Vendor', 'Status']);
    expect([await vendorOf('gateway'), await vendorOf('storage'), await vendorOf('laptop')]).to.deep.equal(['Routerboard.com', 'Synology Incorporated', '—']);
    if (process.env.SCREENSHOTS) {
      await page.evaluate(() => document.fonts.ready);
      await page.screenshot({ path: `${DOCS}web-host-facts.png` });
    }

    // Device type: exact, whatever the case; the address keeps it, and a reload draws the same.
    await page.fill('#hosts-device-type', 'printer');
    await page.press('#hosts-device-type', 'Enter');
    await listed(page, ['office-printer']);
    expect(new URL(page.url()).searchParams.get('device_type')).to.equal('printer');
    await page.reload();
    await listed(page, ['office-printer']);
    expect(await page.inputValue('#hosts-device-type')).to.equal('printer');
    // The device type "Router" is not a prefix filter: "rout" matches nothing.
    await page.fill('#hosts-device-type', 'rout');
    await page.press('#hosts-device-type', 'Enter');
    await page.locator('.notice', { hasText: 'No host matches.' }).waitFor();

    // OS: a prefix, whatever the case; with the device type cleared.
    await page.fill('#hosts-device-type', '');
    await page.fill('#hosts-os', 'linux');
    await page.press('#hosts-os', 'Enter');
    await listed(page, ['storage']);
    expect(new URL(page.url()).searchParams.get('os')).to.equal('linux');
    expect(new URL(page.url()).searchParams.get('device_type')).to.equal(null);
    await page.fill('#hosts-os', 'deb');
    await page.press('#hosts-os', 'Enter');
    await listed(page, ['office-printer']);
    // Both at once: a printer running RouterOS is none of them.
    await page.fill('#hosts-device-type', 'Printer');
    await page.fill('#hosts-os', 'RouterOS');
    await page.press('#hosts-os', 'Enter');
    await page.locator('.notice', { hasText: 'No host matches.' }).waitFor();

    // A device type in the list is a link to its filter (the OS filter cleared first).
    await page.fill('#hosts-device-type', '');
    await page.fill('#hosts-os', '');
    await page.press('#hosts-os', 'Enter');
    await listed(page, ALL);
    await page.locator('a.device-type', { hasText: 'NAS' }).click();
    await listed(page, ['storage']);
    expect(new URL(page.url()).searchParams.get('device_type')).to.equal('NAS');
    expect(await page.inputValue('#hosts-device-type')).to.equal('NAS');
    await page.goBack();
    await listed(page, ALL);
    expectNoProblems(w);

    if (process.env.SCREENSHOTS) {
      await page.setViewportSize({ width: 390, height: 844 });
      await page.evaluate(() => document.fonts.ready);
      await page.screenshot({ path: `${DOCS}web-host-facts-phone.png` });
    }
  });

  it('the list fits a phone: the page never scrolls sideways, every filter is in sight, the device and OS cell wraps within its column', async () => {
    w = await openPage(world.browser, world.app.url, [], { width: 390, height: 844 });
    const { page } = w;
    await signIn(page, world.app.url, world.user, '/hosts?os=Debian');
    await listed(page, ['office-printer']);
    expect(await pageWidth(page)).to.be.at.most(390);
    expect(await page.inputValue('#hosts-os')).to.equal('Debian');
    // Every filter in sight (none scrolled out of the row), and the network column left out (one network).
    for (const id of ['#hosts-search', '#hosts-network', '#hosts-tag', '#hosts-device-type', '#hosts-os']) {
      const box = (await page.locator(id).boundingBox())!;
      expect(box.x, id).to.be.at.least(0);
      expect(box.x + box.width, id).to.be.at.most(390);
    }
    expect(await page.locator('table.list th.network').isVisible()).to.equal(false);
    // The long model wraps in its cell (no cell wider than its text's column allows).
    const cell = await page.locator('td.facts').boundingBox();
    expect(cell!.width).to.be.at.most(18 * 16 + 1);
    expectNoProblems(w);
  });

  it('a host\'s details show its device type and model, its OS with version and confidence, and its MAC vendor', async () => {
    w = await openPage(world.browser, world.app.url, [], { width: 1440, height: 900 });
    const { page } = w;
    await signIn(page, world.app.url, world.user, `/hosts/${ids.get('office-printer')}`);
    await page.locator('article.host-details').waitFor();
    const facts = async () => page.$$eval('article.host-details > dl > dt', (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling!.textContent])));
    expect(await facts()).to.deep.include({
      Device: 'Printer · HP Color LaserJet Pro MFP M479fdw',
      OS: 'Debian Linux 12Medium confidence',
      'MAC vendor': 'Hewlett Packard',
      Status: 'Online',
    });
    expect(await page.locator('.facts-os .badge').textContent()).to.equal('Medium confidence');
    // The addresses' table names each MAC's vendor.
    expect(await page.$$eval('article.host-details section', (ss) => ss.find((s) => s.querySelector('h3')?.textContent === 'IP addresses')!.querySelector('tbody tr')!.textContent)).to.equal('10.3.0.203C:2A:F4:00:00:20Hewlett Packardeth0online');
    if (process.env.SCREENSHOTS) {
      await page.evaluate(() => document.fonts.ready);
      await page.screenshot({ path: `${DOCS}web-host-facts-details.png` });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.evaluate(() => document.fonts.ready);
      expect(await pageWidth(page)).to.be.at.most(390);
      await page.screenshot({ path: `${DOCS}web-host-facts-details-phone.png` });
      await page.setViewportSize({ width: 1440, height: 900 });
    }

    // A host discovery said nothing about: dashes, and no MAC vendor line.
    await page.goto(`${world.app.url}/hosts/${ids.get('laptop')}`);
    await page.locator('article.host-details').waitFor();
    const bare = await facts();
    expect(bare).to.deep.include({ Device: '—', OS: '—' });
    expect(bare).to.not.have.property('MAC vendor');
    // An OS without confidence shows no badge; a device without an OS.
    await page.goto(`${world.app.url}/hosts/${ids.get('door-cam')}`);
    await page.locator('article.host-details').waitFor();
    expect(await facts()).to.deep.include({ Device: 'Camera · Hikvision camera', OS: '—' });
    expectNoProblems(w);
  });
});
