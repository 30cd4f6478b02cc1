// The web map on a realistic network (issue 23: scripts/realisticNetwork.ts, 141 hosts in five
// subnets and a second network) in real headless Chromium: readable at Fit, explained by a legend,
// navigable (network switcher, search, Escape, Fit in every view, service tags), and usable at a
// phone's width. The network is built once for the file (about 20 s through the rate limit); no
// test changes it, so they run in any order. Each test browses as a user of its own (an Admin of
// the organization): the builder's rate-limit bucket is spent, and a page reads a lot.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { PASSWORD, uniqueEmail } from '../support/world.js';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, mapCentre, mapSnapshot, mapTitles, openPage, pageWidth, signIn, waitForMap, realisticWorld, type WatchedPage } from './browser.js';

const PHONE = { width: 390, height: 844 };

describe('web map on a realistic network (Chromium)', function () {
  this.timeout(90_000);
  const world = realisticWorld();
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  const mapPath = (view = 'l3', network = world.user.networkId) => `/networks/${network}/topology?view=${view}`;
  async function openMap(path = mapPath(), viewport?: { width: number; height: number }): Promise<Page> {
    const viewer = { email: uniqueEmail('viewer'), password: PASSWORD };
    await world.owner('POST', '/api/v1/users', { ...viewer, permissions: 'Admin' });
    w = await openPage(world.browser, world.app.url, [], viewport);
    await signIn(w.page, world.app.url, viewer, path);
    await waitForMap(w.page);
    return w.page;
  }
  const hostNames = async (page: Page) => page.$$eval('#host-list .host-entry', (els) => els.map((e) => e.firstChild!.textContent!.trim()));
  /** Host and address nodes (the elements that stand for a host) and what their labels are drawn as. */
  const hostLabels = async (page: Page) => Object.entries(await mapSnapshot(page))
    .filter(([, n]) => (n.kind === 'ip_address' || n.kind === 'host') && n.classes.includes('element'));
  /** The middle of the drawing's bounding box on screen (containers included). */
  async function drawingMiddle(page: Page) {
    const nodes = Object.values(await mapSnapshot(page)).filter((n) => n.kind);
    const left = Math.min(...nodes.map((n) => n.screenX - n.screenWidth! / 2)), right = Math.max(...nodes.map((n) => n.screenX + n.screenWidth! / 2));
    const top = Math.min(...nodes.map((n) => n.screenY - n.screenHeight! / 2)), bottom = Math.max(...nodes.map((n) => n.screenY + n.screenHeight! / 2));
    return { x: (left + right) / 2, y: (top + bottom) / 2 };
  }

  it('at Fit every host label drawn is at least 11 CSS px on screen and nearly every host is named (or counted on a card); subnet titles too, with CIDR and host count; zoomed in, addresses and services appear', async () => {
    const page = await openMap();
    const labels = await hostLabels(page);
    const drawn = labels.filter(([, n]) => n.label);
    expect(labels.length).to.be.greaterThan(30);
    // (A label is whole or not drawn, issue 40.1: a group whose names do not fit is a card that counts them.)
    expect(labels.filter(([, n]) => n.label || n.classes.includes('in-card')).length, 'hosts named or on a card at Fit').to.be.at.least(Math.ceil(labels.length * 0.9));
    for (const [id, n] of drawn) expect(n.fontPx, `${id} "${n.label}"`).to.be.at.least(11);
    const titles = (await mapTitles(page)).filter((t) => t.id.startsWith('subnet:'));
    expect(titles.map((t) => t.text)).to.include('servers · 10.10.2.0/24 · 18 hosts');
    for (const t of titles) expect(t.fontPx, t.text).to.be.at.least(11);

    // Zoomed in on web-01: its address, then its services with their ports.
    const web01 = `ip_address:${world.net.hosts['web-01'].ip_addresses[0].id}`;
    for (let i = 0; i < 8; i++) await page.click('button[aria-label="Zoom in"]');
    await waitFor('details drawn', async () => /nginx :443/.test((await mapSnapshot(page))[web01]!.label ?? ''));
    expect((await mapSnapshot(page))[web01]!.label).to.contain('web-01').and.to.contain('10.10.2.21').and.to.contain('node-exporter :9100');
    await page.click('#fit');
    await waitFor('labels restyled at Fit', async () => (await mapSnapshot(page))[web01]!.label === 'web-01');
    for (const [id, n] of (await hostLabels(page)).filter(([, x]) => x.label)) expect(n.fontPx, id).to.be.at.least(11);
    expectNoProblems(w!);
  });

  it('the legend explains the edges, each dependency by colour and name, and the host kinds; the application view names each service\'s host', async () => {
    const page = await openMap();
    const items = async () => page.$$eval('#map-legend li', (els) => els.map((e) => `${e.getAttribute('data-legend')}|${e.textContent!.trim()}`));
    const legend = await items();
    expect(legend).to.include('same_host|Addresses of one host');
    for (const name of ['Web shop', 'Sessions', 'Metrics', 'Backups', 'Directory', 'Internal DNS']) {
      expect(legend.some((x) => x.startsWith('dependency:') && x.endsWith(`|${name}`)), name).to.equal(true);
    }
    expect(legend).to.include.members(['kind:firewall|Firewall', 'kind:router|Router', 'kind:switch|Switch', 'kind:virtual_machine|Virtual machine', 'kind:container_host|Container host', 'kind:hypervisor|Hypervisor', 'kind:camera|Camera']);
    // Host kinds come from the API, per host.
    const fw = (await mapSnapshot(page))[`ip_address:${world.net.hosts['fw-01'].ip_addresses[0].id}`]!;
    expect(fw.label).to.equal('fw-01');

    await page.selectOption('#view', 'application');
    await waitFor('the application view', async () => Object.values(await mapSnapshot(page)).some((n) => n.kind === 'service'));
    const labels = Object.values(await mapSnapshot(page)).filter((n) => n.kind === 'service').map((n) => n.label);
    expect(labels).to.include.members(['nginx · web-01', 'nginx · web-02', 'nginx · web-03', 'postgres · db-01']);
    expect(await items()).to.include('request_path|Dependency: request path');
    expectNoProblems(w!);
  });

  it('the network switcher reaches the second network, on the map and on the hosts page (with its network column)', async () => {
    const page = await openMap();
    expect(await page.$eval('#network-switcher', (s: HTMLSelectElement) => s.selectedOptions[0]!.textContent)).to.equal('Default');
    await page.selectOption('#network-switcher', world.net.labNetworkId);
    await page.waitForURL(new RegExp(`/networks/${world.net.labNetworkId}/topology`));
    await waitForMap(page);
    await waitFor('the lab hosts listed', async () => (await hostNames(page)).length === 12);
    expect((await hostNames(page)).every((n) => n.startsWith('lab-'))).to.equal(true);
    expect(await page.textContent('.map-head h1')).to.equal('lab');

    await page.click('nav[aria-label=Main] >> text=Hosts');
    await page.waitForSelector('table.list');
    expect(await page.$eval('#network-switcher', (s: HTMLSelectElement) => s.value)).to.equal(world.net.labNetworkId);
    await page.selectOption('#network-switcher', world.user.networkId);
    await page.waitForURL(new RegExp(`/hosts\\?network=${world.user.networkId}`));
    await waitFor('the main network\'s hosts', async () => (await page.$$eval('table.list td.network', (els) => [...new Set(els.map((e) => e.textContent))])).join() === 'Default');
    // Every network: a host of the lab found, named with its network.
    await page.selectOption('#hosts-network', '');
    await page.waitForURL((url) => !url.searchParams.has('network'));
    await page.fill('#hosts-search', 'lab-01');
    await page.press('#hosts-search', 'Enter');
    await waitFor('lab-01 in the lab', async () => JSON.stringify(await page.$$eval('table.list tbody tr', (rows) => rows.map((r) => [r.querySelector('a')!.textContent, r.querySelector('td.network')!.textContent]))) === JSON.stringify([['lab-01', 'lab']]));
    expectNoProblems(w!);
  });

  it('search highlights the hosts it matches and centres the one left; Enter selects it, its neighbourhood stands out', async () => {
    const page = await openMap();
    const db = `ip_address:${world.net.hosts['db-01'].ip_addresses[0].id}`;
    await page.fill('#host-search', 'db-01');
    const centre = await mapCentre(page);
    await waitFor('db-01 centred', async () => {
      const n = (await mapSnapshot(page))[db]!;
      return Math.abs(n.screenX - centre.x) < 2 && Math.abs(n.screenY - centre.y) < 2;
    });
    expect((await mapSnapshot(page))[db]!.classes).to.include('match');
    await page.press('#host-search', 'Enter');
    await page.waitForSelector('#details .host-details');
    const drawn = await mapSnapshot(page);
    expect(drawn[db]!.classes).to.include('highlighted');
    // Its dependency edges are named; far-away hosts are dimmed.
    const webShop = Object.entries(drawn).filter(([id]) => id.startsWith(`dependency:${world.net.dependencies['Web shop'].id}:`));
    expect(webShop.length).to.be.greaterThan(0);
    expect(webShop.some(([, e]) => e.label === 'Web shop')).to.equal(true);
    expect(drawn[`ip_address:${world.net.hosts['fw-01'].ip_addresses[0].id}`]!.classes).to.include('dimmed');
    expect(drawn[`ip_address:${world.net.hosts['app-01'].ip_addresses[0].id}`]!.classes).to.not.include('dimmed');
    expectNoProblems(w!);
  });

  it('Escape closes the details panel and the focus returns to what opened it', async () => {
    const page = await openMap();
    const host = world.net.hosts['web-01'].id;
    const entry = `#host-list .host-entry[data-host-id="${host}"]`;
    await page.focus(entry);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#details .host-details');
    expect(await page.getAttribute(entry, 'aria-pressed')).to.equal('true');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#details', { state: 'hidden' });
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.hostId)).to.equal(host);
    expect(await page.getAttribute(entry, 'aria-pressed')).to.equal('false');
    // Opened from the panel's own Close button: the same.
    await page.keyboard.press('Enter');
    await page.waitForSelector('#details .host-details');
    await page.click('#details .close');
    await page.waitForSelector('#details', { state: 'hidden' });
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.hostId)).to.equal(host);
    expectNoProblems(w!);
  });

  it('Fit centres the drawing in every view, also after switching views', async () => {
    const page = await openMap();
    // (In the part of the canvas the open legend leaves free: each view's legend is its own.)
    const fitCentre = () => page.evaluate(() => (window as any).netinventoryMap.fitCentre()) as Promise<{ x: number; y: number }>;
    // Each view's drawing has nodes of a kind no other view has.
    const kinds: Record<string, string> = { workloads: 'service:', application: 'tag:', l2: 'interface:', l3: 'subnet:' };
    for (const view of ['workloads', 'application', 'l2', 'l3']) {
      await page.selectOption('#view', view);
      await waitFor(`the ${view} view drawn`, async () => Object.keys(await mapSnapshot(page)).some((id) => id.startsWith(kinds[view]!)) && !/Laying out/.test((await page.textContent('.status')) ?? ''));
      const near = async () => {
        const m = await drawingMiddle(page);
        const centre = await fitCentre();
        return Math.abs(m.x - centre.x) < 3 && Math.abs(m.y - centre.y) < 3;
      };
      await waitFor(`${view} centred after the switch`, near);
      // Moved away: a search brings one host into view, zoomed in.
      await page.fill('#host-search', view === 'application' ? 'web-02' : 'rtr-01');
      await waitFor('moved away', async () => !(await near()));
      await page.fill('#host-search', '');
      await page.click('#fit');
      await waitFor(`${view} centred by Fit`, near);
    }
    // The canvas changes size (a window made smaller, a phone turned): a drawing still at Fit is
    // fitted again (centred on the canvas as it now is: its box read from the page, not Cytoscape's cache).
    await page.setViewportSize({ width: 1100, height: 700 });
    await waitFor('centred after the window shrank', async () => {
      const m = await drawingMiddle(page);
      const centre = await page.evaluate(() => (window as any).netinventoryMap.centre()) as { x: number; y: number };
      return centre.x < 700 && Math.abs(m.x - centre.x) < 3 && Math.abs(m.y - centre.y) < 3;
    });
    expectNoProblems(w!);
  });

  it('a tag on services filters services: the hosts running one are listed, other elements are faded out', async () => {
    const page = await openMap(mapPath('workloads'));
    const observability = world.net.tags.observability.id;
    await page.waitForSelector(`#tag-filter optgroup[label="Services tagged"] option[value="${observability}"]`, { state: 'attached' });
    await page.selectOption('#tag-filter', observability);
    const expected = ['app-01', 'db-01', 'docker-01', 'ldap-01', 'mail-01', 'mon-01', 'web-01', 'web-02'];
    await waitFor('hosts running an observability service', async () => JSON.stringify(await hostNames(page)) === JSON.stringify(expected));
    const drawn = await mapSnapshot(page);
    expect(drawn[`service:${world.net.services['docker-01/grafana']}`]!.classes).to.not.include('filtered');
    expect(drawn[`service:${world.net.services['docker-01/gitea']}`]!.classes).to.include('filtered');
    expect(drawn[`service:${world.net.services['web-01/nginx']}`]!.classes).to.include('filtered');
    expect(new URL(page.url()).searchParams.get('tag')).to.equal(observability);
    // A tag on hosts still filters hosts (by the API).
    await page.selectOption('#tag-filter', world.net.tags.staging.id);
    await waitFor('staging hosts', async () => JSON.stringify(await hostNames(page)) === JSON.stringify(['ci-01', 'staging-web']));
    expectNoProblems(w!);
  });

  it('at 390x844 no page is wider than the screen; the map takes it, the list and the panel are sheets, Sign out is in the menu', async () => {
    const page = await openMap(mapPath(), PHONE);
    expect(await pageWidth(page), 'map').to.be.at.most(390);
    const canvas = (await page.locator('#map-canvas').boundingBox())!;
    expect(canvas.width).to.be.at.least(370);
    expect(canvas.height).to.be.at.least(600);
    // The host list opens as a sheet; a host's details too, inside the screen.
    await page.click('.sheet-toggle');
    await page.click(`#host-list .host-entry[data-host-id="${world.net.hosts['db-01'].id}"]`);
    await page.waitForSelector('#details .host-details');
    const panel = (await page.locator('#details').boundingBox())!;
    expect(panel.x).to.be.at.least(0);
    expect(panel.x + panel.width).to.be.at.most(390);
    expect(await pageWidth(page), 'map with the panel').to.be.at.most(390);
    // Sign out: behind the menu, inside the screen.
    expect(await page.isVisible('#sign-out')).to.equal(false);
    await page.click('.menu-toggle');
    const signOut = (await page.locator('#sign-out').boundingBox())!;
    expect(signOut.x + signOut.width).to.be.at.most(390);
    for (const path of ['/hosts', `/hosts/${world.net.hosts['docker-01'].id}`, '/daemons', '/api-keys']) {
      await page.goto(`${world.app.url}${path}`);
      await page.waitForSelector(path === '/hosts' ? 'table.list' : path.startsWith('/hosts/') ? '.host-details' : 'h1');
      expect(await pageWidth(page), path).to.be.at.most(390);
    }
    expectNoProblems(w!);
  });
  it('at Fit on a wide screen the open legend covers nothing drawn, in every view', async () => {
    const page = await openMap();
    expect(await page.$eval('#map-legend', (d: HTMLDetailsElement) => d.open)).to.equal(true);
    const kinds: Record<string, string> = { workloads: 'service:', l2: 'interface:', l3: 'subnet:' };
    for (const view of ['l3', 'workloads', 'l2']) {
      if (view !== 'l3') {
        await page.selectOption('#view', view);
        await waitFor(`the ${view} view drawn`, async () => Object.keys(await mapSnapshot(page)).some((id) => id.startsWith(kinds[view]!)) && !/Laying out/.test((await page.textContent('.status')) ?? ''));
      }
      await page.click('#fit');
      const legend = (await page.locator('#map-legend').boundingBox())!;
      expect(legend.width * legend.height, 'the legend is there').to.be.greaterThan(100 * 100);
      const covered = Object.entries(await mapSnapshot(page)).filter(([, n]) => n.kind && n.screenX + n.screenWidth! / 2 > legend.x && n.screenX - n.screenWidth! / 2 < legend.x + legend.width
        && n.screenY + n.screenHeight! / 2 > legend.y && n.screenY - n.screenHeight! / 2 < legend.y + legend.height);
      expect(covered.map(([id, n]) => `${id} ${n.label}`), view).to.deep.equal([]);
    }
    expectNoProblems(w!);
  });

  it('on a phone the map opens where host names read (>= 11 px), its top-left in view; Fit then shows the whole drawing', async () => {
    const page = await openMap(mapPath(), PHONE);
    const canvas = (await page.locator('#map-canvas').boundingBox())!;
    const inView = (n: { screenX: number; screenY: number }) => n.screenX > canvas.x && n.screenX < canvas.x + canvas.width && n.screenY > canvas.y && n.screenY < canvas.y + canvas.height;
    const named = (await hostLabels(page)).filter(([, n]) => n.label && inView(n));
    expect(named.length, 'hosts named in view').to.be.at.least(5);
    for (const [id, n] of named) expect(n.fontPx, id).to.be.at.least(11);
    await page.click('#fit');
    const middle = await drawingMiddle(page);
    const centre = await page.evaluate(() => (window as any).netinventoryMap.fitCentre());
    expect(Math.abs(middle.x - centre.x) < 3 && Math.abs(middle.y - centre.y) < 3, 'the whole drawing centred at Fit').to.equal(true);
    expect(await pageWidth(page)).to.be.at.most(390);
    expectNoProblems(w!);
  });
});
