// The map's tag filter (issue 22: no test chose a tag) in real headless Chromium against a real
// app and layout worker: choosing a tag keeps only the hosts carrying it, the address keeps the
// choice (a reload draws the same), and "All tags" brings every host back.
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

describe('web map: the tag filter (Chromium)', function () {
  this.timeout(60_000);
  let browser: Browser;
  let app: TestApp;
  let layoutWorker: Worker;
  let workerServices: ReturnType<typeof workerServicesFor>;
  let user: Awaited<ReturnType<typeof registerUser>>;
  let n: Net;
  let w: WatchedPage | undefined;

  before(async () => { browser = await launchBrowser(); });
  after(async () => { await browser?.close(); });
  beforeEach(async () => {
    app = await startTestApp();
    workerServices = workerServicesFor(app);
    layoutWorker = await startTopologyLayout(workerServices);
    user = await registerUser(app.url);
    n = await buildNetwork(app, await login(app.url, user.email, user.password), user.networkId);
  });
  afterEach(async () => {
    await w?.close();
    w = undefined;
    await layoutWorker.close();
    await workerServices.close();
    await app.close();
  });
  const hostNames = async () => w!.page.$$eval('#host-list .host-entry', (els) => els.map((e) => e.firstChild!.textContent!.trim()));
  const listed = (names: string[]) => waitFor(`the host list to be ${names.join(', ')}`, async () => JSON.stringify(await hostNames()) === JSON.stringify(names));

  it('choosing a tag draws only the hosts carrying it; the address keeps it; All tags draws every host again', async () => {
    const auth = await login(app.url, user.email, user.password);
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth, body: { name: 'prod', color: 'Red' } }), 201);
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${n.db.id}`, { auth, body: { id: n.db.id, name: 'db', hidden: false, tags: [tag.id], virtualization: { type: 'Proxmox', details: { service_id: n.svc.metrics, vm_id: 101 } } } }));
    w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user, `/networks/${user.networkId}/topology`);
    await waitForMap(w.page);
    await listed(['bare', 'db', 'web']);

    await w.page.waitForSelector(`#tag-filter option[value="${tag.id}"]`, { state: 'attached' });
    await w.page.selectOption('#tag-filter', tag.id);
    await listed(['db']);
    const drawn = await mapSnapshot(w.page);
    expect(drawn).to.have.property(`ip_address:${n.ip.dbA}`);
    for (const gone of [`ip_address:${n.ip.webA}`, `ip_address:${n.ip.webB}`, `host:${n.bare.id}`]) expect(drawn, gone).to.not.have.property(gone);
    expect(new URL(w.page.url()).searchParams.get('tag')).to.equal(tag.id);

    await w.page.reload();
    await waitForMap(w.page);
    await listed(['db']);
    expect(await w.page.inputValue('#tag-filter')).to.equal(tag.id);

    await w.page.selectOption('#tag-filter', '');
    await listed(['bare', 'db', 'web']);
    expect(new URL(w.page.url()).searchParams.get('tag')).to.equal(null);
    expectNoProblems(w);
  });
});
