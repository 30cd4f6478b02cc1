// Issue 23.4 in real headless Chromium: History and Compare on a network filled through the API
// (scripts/realisticNetwork.ts: several hundred changes, past the timeline's 200 ticks) never stay
// silent or blank: History draws a slider over grouped ticks, Compare's default window (the last
// changes) draws a marked map and a list, and an entry of the list focuses its host. The network is
// built once for the file; no test changes it, so they run in any order.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, mapSnapshot, openPage, signIn, waitForMap, realisticWorld, type WatchedPage } from './browser.js';

describe('web History and Compare on a busy network (Chromium)', function () {
  this.timeout(180_000);
  const world = realisticWorld();
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function openMap(): Promise<Page> {
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, world.user, `/networks/${world.user.networkId}/topology`);
    await waitForMap(w.page);
    return w.page;
  }
  const status = async (page: Page) => (await page.textContent('.status')) ?? '';

  it('History draws the whole history as a slider of grouped ticks, each saying how many changes it stands for', async () => {
    const page = await openMap();
    await page.click('#history-button');
    await page.waitForSelector('#time-slider, #history-problem');
    expect(await page.$('#history-problem'), (await page.textContent('#history-problem').catch(() => null)) ?? '').to.equal(null);
    await waitFor('history laid out', async () => /As of/.test(await status(page)));
    const max = Number(await page.getAttribute('#time-slider', 'max'));
    expect(max).to.be.within(2, 199); // at most 200 ticks
    expect(await page.textContent('#history-summary')).to.match(/[\d,]+ changes since .*, in \d+ steps/);
    // The last tick is today's map; the first (the network's creation) has nothing yet.
    const last = await mapSnapshot(page);
    const webA = `ip_address:${world.net.hosts['web-01'].ip_addresses[0].id}`;
    expect(last[webA]!.classes).to.not.include('absent');
    await page.$eval('#time-slider', (el: HTMLInputElement) => { el.value = '0'; el.dispatchEvent(new Event('input')); });
    expect((await mapSnapshot(page))[webA]!.classes).to.include('absent');
    await page.$eval('#time-slider', (el: HTMLInputElement) => { el.value = String(Number(el.max) - 1); el.dispatchEvent(new Event('input')); });
    expect(await page.textContent('#time-label')).to.be.a('string').and.not.empty;
    expectNoProblems(w!);
  });

  it('opening History fits the map again in the shorter canvas (nothing cut at the bottom), and a summary\'s count reads as a bound', async () => {
    const page = await openMap();
    const outside = async () => {
      const canvas = (await page.locator('#map-canvas').boundingBox())!;
      return Object.entries(await mapSnapshot(page)).filter(([, n]) => n.kind && (n.screenY + n.screenHeight! / 2 > canvas.y + canvas.height + 1 || n.screenY - n.screenHeight! / 2 < canvas.y - 1)).map(([id]) => id);
    };
    expect(await outside(), 'live').to.deep.equal([]);
    await page.click('#history-button');
    await waitFor('history laid out', async () => /As of/.test(await status(page)));
    expect(await outside(), 'History open').to.deep.equal([]);
    // (Brought into view from the list of containers: at Fit on a busy network it may be under its subnet's card, or too small to name.)
    const [summary] = Object.entries(await mapSnapshot(page)).find(([, n]) => n.kind === 'summary')!;
    await page.click('details.containers > summary');
    await page.click(`#container-list li[data-node-id="${summary}"] button`);
    await waitFor('the summary named', async () => /^up to \d+ hosts/.test((await mapSnapshot(page))[summary]!.label ?? ''));
    await page.click('#history-live');
    await waitFor('back to live', async () => /Live/.test(await status(page)));
    expect(await outside(), 'History closed').to.deep.equal([]);
    expectNoProblems(w!);
  });

  it('Compare\'s default window is the last changes: a marked map and the list, never a blank map', async () => {
    const page = await openMap();
    await page.click('#compare-button');
    await page.waitForSelector('#change-list', { timeout: 90_000 }); // a busy network's diff under a loaded 2-core CI run took over 30 s
    await waitFor('diff drawn', async () => /From/.test(await status(page)));
    expect(await page.textContent('#compare-window')).to.match(/^The last \d+ changes to the network, since /);
    expect(new URL(page.url()).searchParams.get('from')).to.be.a('string');
    const lines = await page.$$eval('#change-list li', (els) => els.map((e) => e.textContent));
    expect(lines).to.include('added web-03 10.10.2.27 added');
    const drawn = Object.values(await mapSnapshot(page));
    expect(drawn.filter((n) => n.classes.includes('added')).length).to.be.greaterThan(0);
    expect(drawn.filter((n) => !n.classes.includes('absent')).length).to.be.greaterThan(20);
    expect(await page.$$('.notice.error')).to.have.length(0);
    expectNoProblems(w!);
  });

  it('a host’s page lists what changed at each entry of its history: its own fields and its children (+ service …)', async () => {
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, world.user, `/hosts/${world.net.hosts['web-01'].id}`);
    await w.page.waitForSelector('.host-history .history-change');
    const lines = await w.page.$$eval('.host-history .history-change', (els) => els.map((e) => e.textContent));
    expect(lines).to.include.members(['host created (web-01)', '+ service nginx', '+ port 443/tcp', '+ binding nginx: 443/tcp', 'host: virtualization changed']);
    expectNoProblems(w!);
  });

  it('an entry of the diff list focuses its host: selected on the map, its details open', async () => {
    const page = await openMap();
    await page.click('#compare-button');
    await page.waitForSelector('#change-list', { timeout: 90_000 });
    await waitFor('diff drawn', async () => /From/.test(await status(page)));
    const web03 = world.net.hosts['web-03'];
    await page.click('#change-list .change-entry >> text=web-03 10.10.2.27 added');
    await page.waitForSelector('#details .host-details');
    expect(await page.textContent('#details h2')).to.equal('web-03');
    expect((await mapSnapshot(page))[`ip_address:${web03.ip_addresses[0].id}`]!.classes).to.include('highlighted');
    expectNoProblems(w!);
  });
});
