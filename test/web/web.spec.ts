// The web application (issue 12) in real headless Chromium against a real app, database, Redis and
// layout worker: sign in, the map of a seeded network, search and the details panel, the history
// slider, the diff, pins, the SVG export, an expired session. No test may log a console error or
// ask another origin for anything.
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import type { Worker } from 'bullmq';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { login } from '../support/world.js';
import { buildNetwork, type Net } from '../support/network.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { startTopologyLayout } from '../../workers/topologyLayout.js';
import { expectNoProblems, launchBrowser, mapSnapshot, openPage, registerUser, signIn, waitForMap, type WatchedPage } from './browser.js';

describe('web application (Chromium)', function () {
  this.timeout(60_000);
  let browser: Browser;
  let app: TestApp;
  let layoutWorker: Worker;
  let workerServices: ReturnType<typeof workerServicesFor>;
  let user: Awaited<ReturnType<typeof registerUser>>;
  let n: Net;
  let w: WatchedPage;
  const auth = async () => login(app.url, user.email, user.password);

  before(async () => { browser = await launchBrowser(); });
  after(async () => { await browser?.close(); });
  beforeEach(async () => {
    app = await startTestApp();
    workerServices = workerServicesFor(app);
    layoutWorker = await startTopologyLayout(workerServices);
    user = await registerUser(app.url);
    n = await buildNetwork(app, await auth(), user.networkId);
  });
  afterEach(async () => {
    await w?.close();
    await layoutWorker.close();
    await workerServices.close();
    await app.close();
  });
  const mapPath = () => `/networks/${user.networkId}/topology`;
  const hostNames = async () => w.page.$$eval('#host-list .host-entry', (els) => els.map((e) => e.firstChild!.textContent!.trim()));

  it('signs in and draws the map: every visible host in the list, every subnet as a container, nothing from another origin', async () => {
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user);
    await waitForMap(w.page);
    expect(new URL(w.page.url()).pathname).to.equal(mapPath());
    expect(await hostNames()).to.deep.equal(['bare', 'db', 'web']); // the hidden host only when asked
    expect(await w.page.$$eval('#container-list li', (els) => els.map((e) => e.getAttribute('data-node-id')))).to.include.members([`subnet:${n.subnetA.id}`, `subnet:${n.subnetB.id}`]);
    const drawn = await mapSnapshot(w.page);
    expect(drawn).to.include.keys(`ip_address:${n.ip.webA}`, `ip_address:${n.ip.webB}`, `ip_address:${n.ip.dbA}`, `host:${n.bare.id}`, `subnet:${n.subnetA.id}`);
    // At the API's positions (centre of its box).
    const api = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${user.networkId}`, { auth: await auth() }));
    const box = api.layout.positions[`ip_address:${n.ip.dbA}`];
    expect(drawn[`ip_address:${n.ip.dbA}`]).to.include({ x: box.x + box.width / 2, y: box.y + box.height / 2 });
    await w.page.check('#show-hidden');
    await waitFor('hidden host listed', async () => (await hostNames()).includes('ghost'));
    expectNoProblems(w);
  });

  it('search focuses a host and the panel shows its services', async () => {
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user, mapPath());
    await waitForMap(w.page);
    await w.page.fill('#host-search', '10.1.0.20'); // by address
    expect(await hostNames()).to.deep.equal(['db']);
    await w.page.press('#host-search', 'Enter');
    await w.page.waitForSelector('#details .host-details');
    expect(await w.page.getAttribute('#host-list .host-entry', 'aria-pressed')).to.equal('true');
    const panel = await w.page.textContent('#details');
    expect(panel).to.contain('postgres').and.to.contain('PostgreSQL').and.to.contain('10.1.0.20').and.to.contain('port 5432/Tcp');
    const drawn = await mapSnapshot(w.page);
    expect(drawn[`ip_address:${n.ip.dbA}`]!.classes).to.include('highlighted');
    expectNoProblems(w);
  });

  it('a host\'s page links to the host on its map, selected, its details open (a hidden host with the hidden ones shown)', async () => {
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user, `/hosts/${n.db.id}`);
    await w.page.click('#show-on-map');
    await waitForMap(w.page);
    await w.page.waitForSelector('#details .host-details');
    expect(await w.page.textContent('#details h2')).to.equal('db');
    expect((await mapSnapshot(w.page))[`ip_address:${n.ip.dbA}`]!.classes).to.include('highlighted');
    expect(await w.page.getAttribute(`#host-list .host-entry[data-host-id="${n.db.id}"]`, 'aria-pressed')).to.equal('true');
    // The hidden host: its link shows the hidden hosts too, so it is there to select.
    await w.page.goto(`${app.url}/hosts/${n.hidden.id}`);
    await w.page.click('#show-on-map');
    await waitForMap(w.page);
    await w.page.waitForSelector('#details .host-details');
    expect(await w.page.isChecked('#show-hidden')).to.equal(true);
    expect(await w.page.getAttribute(`#host-list .host-entry[data-host-id="${n.hidden.id}"]`, 'aria-pressed')).to.equal('true');
    expectNoProblems(w);
  });

  it('a hostile ?focus= is ignored: the map never asks the API for another resource (/api/v1/auth/keys)', async () => {
    w = await openPage(browser, app.url);
    const asked: string[] = [];
    w.page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    await signIn(w.page, app.url, user, mapPath());
    await waitForMap(w.page);
    for (const focus of ['..%2Fauth%2Fkeys', '..%2F..%2Fv1%2Fauth%2Fkeys', `host%3A${n.db.id}%2F..%2F..%2Fauth%2Fkeys`]) {
      // The change stream is opened just after the focus is handled: any request for it was made by then.
      const streamOpened = w.page.waitForRequest((r) => r.url().includes('/api/v1/events/stream'));
      await w.page.goto(`${app.url}${mapPath()}?focus=${focus}`);
      await waitForMap(w.page);
      await streamOpened;
      expect(await w.page.isVisible('#details'), focus).to.equal(false);
    }
    expect(asked.filter((path) => path.startsWith('/api/v1/auth/'))).to.deep.equal([]);
    expect(asked.filter((path) => path.startsWith('/api/v1/hosts/'))).to.deep.equal([]);
    expectNoProblems(w);
  });

  it('the history slider back in time hides a host created later; the others do not move', async () => {
    const created = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: await auth(), body: { network_id: user.networkId, name: 'latecomer', ip_addresses: [{ subnet_id: n.subnetA.id, ip_address: '10.1.0.77' }] } }), 201);
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user, mapPath());
    await waitForMap(w.page);
    expect(await hostNames()).to.include('latecomer');
    const live = await mapSnapshot(w.page);
    await w.page.click('#history-button');
    await w.page.waitForSelector('#time-slider');
    await waitFor('history laid out', async () => /As of/.test((await w.page.textContent('.status')) ?? ''));
    const last = await mapSnapshot(w.page);
    // The step before the latecomer's creation: the last tick before the end.
    await w.page.$eval('#time-slider', (el: HTMLInputElement) => { el.value = String(Number(el.max) - 1); el.dispatchEvent(new Event('input')); });
    const before = await mapSnapshot(w.page);
    const late = `ip_address:${created.ip_addresses[0].id}`;
    expect(before[late]!.classes).to.include('absent');
    expect(await hostNames()).to.not.include('latecomer');
    for (const id of [`ip_address:${n.ip.webA}`, `ip_address:${n.ip.dbA}`, `host:${n.bare.id}`]) {
      expect({ x: before[id]!.x, y: before[id]!.y }, id).to.deep.equal({ x: last[id]!.x, y: last[id]!.y });
      expect({ x: before[id]!.x, y: before[id]!.y }, `${id} as on the live map`).to.deep.equal({ x: live[id]!.x, y: live[id]!.y });
    }
    expect(new URL(w.page.url()).searchParams.get('at')).to.be.a('string');
    expectNoProblems(w);
  });

  it('the map follows a change without a reload (the network\'s change stream): a host added appears, the others stay where they were', async () => {
    w = await openPage(browser, app.url);
    const streams: string[] = [];
    w.page.on('request', (r) => { if (r.url().includes('/api/v1/events/stream')) streams.push(new URL(r.url()).searchParams.get('network_id') ?? ''); });
    await signIn(w.page, app.url, user, mapPath());
    await waitForMap(w.page);
    await waitFor('the change stream opened', async () => streams.length > 0);
    expect(streams[0]).to.equal(user.networkId);
    const before = await mapSnapshot(w.page);
    await w.page.evaluate(() => { (window as any).sameDocument = true; });
    const added = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: await auth(), body: { network_id: user.networkId, name: 'newcomer', ip_addresses: [{ subnet_id: n.subnetA.id, ip_address: '10.1.0.88' }] } }), 201);
    await waitFor('the new host on the map', async () => (await hostNames()).includes('newcomer'), 15_000);
    const after = await mapSnapshot(w.page);
    expect(after[`ip_address:${added.ip_addresses[0].id}`]).to.not.equal(undefined);
    for (const id of [`ip_address:${n.ip.webA}`, `ip_address:${n.ip.webB}`, `ip_address:${n.ip.dbA}`, `host:${n.bare.id}`]) {
      expect({ x: after[id]!.x, y: after[id]!.y }, id).to.deep.equal({ x: before[id]!.x, y: before[id]!.y });
    }
    expect(await w.page.evaluate(() => (window as any).sameDocument)).to.equal(true); // not reloaded
    // Read because the stream said so, before the digest poll's first turn (5 s after the map opened).
    const reads = await w.page.evaluate(() => (window as any).netinventoryMap.liveReads());
    expect(reads.change).to.be.greaterThan(0);
    expect(reads.poll).to.equal(0);
    expectNoProblems(w);
  });

  it('diff mode marks an added and a removed host and lists the changes', async () => {
    const from = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${user.networkId}`, { auth: await auth() })).as_of;
    const added = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: await auth(), body: { network_id: user.networkId, name: 'newcomer', ip_addresses: [{ subnet_id: n.subnetB.id, ip_address: '10.2.0.50' }] } }), 201);
    expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${n.bare.id}`, { auth: await auth() }));
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user, `${mapPath()}/diff?from=${encodeURIComponent(from)}`);
    await w.page.waitForSelector('#change-list');
    await waitFor('diff drawn', async () => /From/.test((await w.page.textContent('.status')) ?? ''));
    const lines = await w.page.$$eval('#change-list li', (els) => els.map((e) => e.textContent));
    expect(lines).to.include('added newcomer 10.2.0.50 added');
    expect(lines).to.include('removed bare removed');
    const drawn = await mapSnapshot(w.page);
    expect(drawn[`ip_address:${added.ip_addresses[0].id}`]!.classes).to.include('added');
    expect(drawn[`host:${n.bare.id}`]!.classes).to.include('removed');
    expectNoProblems(w);
  });

  it('dragging a node pins it: it is where it was dropped after a reload, until unpinned', async () => {
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user, mapPath());
    await waitForMap(w.page);
    const id = `host:${n.bare.id}`;
    const start = (await mapSnapshot(w.page))[id]!;
    const saved = w.page.waitForResponse((r) => r.url().endsWith('/api/v1/topology/positions') && r.request().method() === 'PUT');
    await w.page.mouse.move(start.screenX, start.screenY);
    await w.page.mouse.down();
    await w.page.mouse.move(start.screenX + 60, start.screenY + 40, { steps: 8 });
    await w.page.mouse.up();
    expect((await saved).status()).to.equal(200);
    const dropped = (await mapSnapshot(w.page))[id]!;
    expect(dropped.x).to.not.equal(start.x);
    await w.page.reload();
    await waitForMap(w.page);
    const reloaded = (await mapSnapshot(w.page))[id]!;
    expect({ x: reloaded.x, y: reloaded.y }).to.deep.equal({ x: dropped.x, y: dropped.y });
    expect(reloaded.classes).to.include('pinned');
    await w.page.click('#unpin-all');
    await waitFor('unpinned', async () => !(await mapSnapshot(w.page))[id]!.classes.includes('pinned'));
    expect((await mapSnapshot(w.page))[id]!.x).to.equal(start.x);
    expectNoProblems(w);
  });

  it('the SVG export downloads the view drawn, named as the API names its exports (test/web/exports.spec.ts: every export)', async () => {
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user, mapPath());
    await waitForMap(w.page);
    await w.page.click('#export-menu');
    const [download] = await Promise.all([w.page.waitForEvent('download'), w.page.click('#export-svg')]);
    expect(download.suggestedFilename()).to.match(/^topology-.*-l3-\d{4}-\d\d-\d\d\.svg$/);
    // The PNG and the API's GraphML of the same view are named the same way (it was topology-l3.png).
    await w.page.click('#export-menu');
    const [png] = await Promise.all([w.page.waitForEvent('download'), w.page.click('#export-png-1x')]);
    expect(png.suggestedFilename()).to.equal(download.suggestedFilename().replace(/\.svg$/, '.png'));
    await w.page.click('#export-menu');
    const [graphml] = await Promise.all([w.page.waitForEvent('download'), w.page.click('#export-graphml')]);
    expect(graphml.suggestedFilename()).to.equal(download.suggestedFilename().replace(/\.svg$/, '.graphml'));
    const path = await download.path();
    const svg = (await import('node:fs')).readFileSync(path!, 'utf8');
    expect(svg).to.match(/^<\?xml|^<svg/).and.to.contain('web').and.to.contain('office');
    expectNoProblems(w);
  });

  it('an expired session returns to the sign-in page with a message, then back where it was', async () => {
    // The browser's own report of the 401 that ends the session is the only console error allowed here.
    w = await openPage(browser, app.url, [/status of 401/]);
    await signIn(w.page, app.url, user, mapPath());
    await waitForMap(w.page);
    await app.services.orm.em.fork().execute(`update sessions set expires_at = now() - interval '1 second'`);
    await w.page.click('nav[aria-label=Main] >> text=Hosts');
    await w.page.waitForURL(/\/signin\?expired=1/);
    expect(await w.page.textContent('.notice')).to.contain('session has expired');
    await w.page.fill('#email', user.email);
    await w.page.fill('#password', user.password);
    await w.page.click('button[type=submit]');
    await w.page.waitForURL(/\/hosts$/);
    await w.page.waitForSelector('table.list');
    expect(await w.page.$$eval('table.list tbody tr td:first-child a', (els) => els.map((e) => e.textContent))).to.include.members(['web', 'db', 'bare']);
    expectNoProblems(w);
  });
});

