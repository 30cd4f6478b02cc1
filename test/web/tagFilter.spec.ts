// The map's tag filter (issue 22: no test chose a tag) in real headless Chromium against a real
// app and layout worker: choosing a tag keeps only the hosts carrying it, the address keeps the
// choice (a reload draws the same), and "All tags" brings every host back.
import { expect } from 'chai';
import { call, expectOk } from '../support/client.js';
import { login } from '../support/world.js';
import { buildNetwork, type Net } from '../support/network.js';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, mapSnapshot, openPage, signIn, waitForMap, webWorld, type WatchedPage } from './browser.js';

describe('web map: the tag filter (Chromium)', function () {
  this.timeout(60_000);
  let n: Net;
  let w: WatchedPage | undefined;
  const world = webWorld({ ready: async ({ app, user }) => { n = await buildNetwork(app, await login(app.url, user.email, user.password), user.networkId); } });
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });
  const hostNames = async () => w!.page.$$eval('#host-list .host-entry', (els) => els.map((e) => e.firstChild!.textContent!.trim()));
  const listed = (names: string[]) => waitFor(`the host list to be ${names.join(', ')}`, async () => JSON.stringify(await hostNames()) === JSON.stringify(names));

  it('choosing a tag draws only the hosts carrying it; the address keeps it; All tags draws every host again', async () => {
    const auth = await login(world.app.url, world.user.email, world.user.password);
    const tag = expectOk(await call(world.app.url, 'POST', '/api/v1/tags', { auth, body: { name: 'prod', color: 'Red' } }), 201);
    expectOk(await call(world.app.url, 'PUT', `/api/v1/hosts/${n.db.id}`, { auth, body: { id: n.db.id, name: 'db', hidden: false, tags: [tag.id], virtualization: { type: 'Proxmox', details: { service_id: n.svc.metrics, vm_id: 101 } } } }));
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, world.user, `/networks/${world.user.networkId}/topology`);
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
    // The tag's option comes with the tags list, read after the map is drawn: then it is the one chosen.
    await w.page.waitForSelector(`#tag-filter option[value="${tag.id}"]`, { state: 'attached' });
    expect(await w.page.inputValue('#tag-filter')).to.equal(tag.id);

    await w.page.selectOption('#tag-filter', '');
    await listed(['bare', 'db', 'web']);
    expect(new URL(w.page.url()).searchParams.get('tag')).to.equal(null);
    expectNoProblems(w);
  });
});
