// The map on a phone (390x844) in real headless Chromium, on the realistic network
// (scripts/realisticNetwork.ts, with its history): the toolbar fits the screen, its less-used tools
// folded behind More; every tool reachable without scrolling sideways; "+ Add" whole on screen;
// Compare's From and To on screen; the history slider across the screen with step buttons that move
// it by one step (the map drawn at that instant); the map's dialogs keep their buttons on screen.
// At 1440x900 the toolbar is one row, as before.
// SCREENSHOTS=1 writes docs/web-map-toolbar-phone.png, docs/web-compare-phone.png and
// docs/web-history-phone.png (390x844).
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { waitFor } from '../workers/support.js';
import { dialogButtonsInView, expectNoProblems, mapSnapshot, openPage, pageWidth, realisticWorld, signIn, waitForMap, type WatchedPage } from './browser.js';

const DOCS = 'docs/';
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
/** Every tool of the map's toolbar. */
const TOOLS = ['#view', '#tag-filter', '#show-hidden', '#fit', '[aria-label="Zoom in"]', '[aria-label="Zoom out"]', '#history-button', '#compare-button', '#unpin-all', '#add-menu', '#export-menu', '#share-map'];

describe('web map toolbar, Compare and History on a phone (Chromium)', function () {
  this.timeout(180_000);
  const world = realisticWorld();
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  async function openMap(viewport: { width: number; height: number }): Promise<Page> {
    w = await openPage(world.browser, world.app.url, [], viewport);
    await signIn(w.page, world.app.url, world.user, `/networks/${world.user.networkId}/topology?view=l3`);
    await waitForMap(w.page);
    return w.page;
  }
  const status = async (page: Page) => (await page.textContent('.status')) ?? '';

  /** The element is whole inside the viewport and on top at its centre (a tap there reaches it). */
  async function reachable(page: Page, selector: string) {
    const { width, height } = page.viewportSize()!;
    const box = await page.locator(selector).boundingBox();
    expect(box, `${selector} is shown`).to.not.equal(null);
    expect(box!.x, selector).to.be.at.least(0);
    expect(box!.y, selector).to.be.at.least(0);
    expect(box!.x + box!.width, `${selector} at ${width} px`).to.be.at.most(width);
    expect(box!.y + box!.height, selector).to.be.at.most(height);
    const onTop = await page.evaluate(([sel, x, y]) => {
      const hit = document.elementFromPoint(x as number, y as number);
      const target = document.querySelector(sel as string)!;
      return !!hit && (target.contains(hit) || hit.contains(target) || hit === target.closest('label'));
    }, [selector, box!.x + box!.width / 2, box!.y + box!.height / 2]);
    expect(onTop, `${selector} on top`).to.equal(true);
  }

  it('at 390 px the toolbar fits: View, Fit, zoom and History in it, the rest behind More; every tool reachable; "+ Add" whole on screen', async () => {
    const page = await openMap(PHONE);
    expect(await pageWidth(page)).to.be.at.most(PHONE.width);
    // Nothing scrolls sideways in the toolbar.
    expect(await page.$eval('.map-tools', (el) => el.scrollWidth <= el.clientWidth)).to.equal(true);
    for (const id of ['#view', '#fit', '#history-button', '#map-more-button']) await reachable(page, id);
    // One row: More beside Fit.
    const middle = async (id: string) => { const b = (await page.locator(id).boundingBox())!; return b.y + b.height / 2; };
    expect(Math.abs((await middle('#map-more-button')) - (await middle('#fit')))).to.be.at.most(4);
    expect(await page.isVisible('#compare-button')).to.equal(false);
    await page.click('#map-more-button');
    expect(await page.getAttribute('#map-more-button', 'aria-expanded')).to.equal('true');
    for (const id of TOOLS) await reachable(page, id);
    expect(await pageWidth(page)).to.be.at.most(PHONE.width);
    // "+ Add": all its items on screen, the first focused.
    await page.click('#add-menu');
    for (const kind of ['host', 'subnet', 'dependency', 'tag']) await reachable(page, `#add-menu-items [data-kind=${kind}]`);
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.kind)).to.equal('host');
    if (process.env.SCREENSHOTS) await page.screenshot({ path: `${DOCS}web-map-toolbar-phone.png` });
    // A dialog opened from it keeps its buttons on screen.
    await page.click('#add-menu-items [data-kind=subnet]');
    await page.waitForSelector('dialog[open] button[type=submit]');
    expect(await page.isHidden('#add-menu-items')).to.equal(true);
    await dialogButtonsInView(page, 'the new subnet dialog at 390x844');
    await page.keyboard.press('Escape');
    // The Export menu from More: whole on screen.
    await page.click('#export-menu');
    await reachable(page, '#export-png-1x');
    await reachable(page, '#export-drawio');
    await page.keyboard.press('Escape');
    // More closes again, the map gets the height back.
    await page.click('#map-more-button');
    expect(await page.isVisible('#map-more')).to.equal(false);
    expectNoProblems(w!);
  });

  it('at 390 px the history slider spans the screen; its step buttons move it by one step and the map is drawn at that instant', async () => {
    const page = await openMap(PHONE);
    await page.click('#history-button');
    await page.waitForSelector('#time-slider');
    await waitFor('history laid out', async () => /As of/.test(await status(page)));
    expect(await pageWidth(page)).to.be.at.most(PHONE.width);
    const slider = (await page.locator('#time-slider').boundingBox())!;
    expect(slider.width, 'slider width').to.be.at.least(PHONE.width * 0.6);
    for (const id of ['#time-previous', '#time-next', '#time-slider', '#time-label']) await reachable(page, id);
    const max = Number(await page.getAttribute('#time-slider', 'max'));
    const value = () => page.$eval('#time-slider', (el: HTMLInputElement) => Number(el.value));
    expect(await value()).to.equal(max);
    expect(await page.isDisabled('#time-next')).to.equal(true);
    // web-01 exists today, not at the network's creation (the first step).
    const webA = `ip_address:${world.net.hosts['web-01'].ip_addresses[0].id}`;
    expect((await mapSnapshot(page))[webA]!.classes).to.not.include('absent');
    await page.click('#time-previous');
    expect(await value()).to.equal(max - 1);
    const label = await page.textContent('#time-label');
    await page.$eval('#time-slider', (el: HTMLInputElement) => { el.value = '1'; el.dispatchEvent(new Event('input')); });
    const atOne = new URL(page.url()).searchParams.get('at');
    await page.click('#time-previous');
    expect(await value()).to.equal(0);
    expect(await page.isDisabled('#time-previous')).to.equal(true);
    expect((await mapSnapshot(page))[webA]!.classes).to.include('absent');
    const atZero = new URL(page.url()).searchParams.get('at');
    expect(atZero).to.be.a('string').and.not.equal(atOne);
    expect(await page.textContent('#time-label')).to.not.equal(label);
    await page.click('#time-next');
    expect(await value()).to.equal(1);
    expect(new URL(page.url()).searchParams.get('at')).to.equal(atOne);
    expect(await status(page)).to.contain(await page.textContent('#time-label'));
    if (process.env.SCREENSHOTS) {
      await page.$eval('#time-slider', (el: HTMLInputElement) => { el.value = String(Math.round(Number(el.max) / 2)); el.dispatchEvent(new Event('input')); });
      await page.waitForTimeout(400); // the containers' boxes follow the canvas on the next frame
      await page.screenshot({ path: `${DOCS}web-history-phone.png` });
    }
    expectNoProblems(w!);
  });

  it('at 390 px Compare\'s From, To and buttons are on screen', async () => {
    const page = await openMap(PHONE);
    await page.click('#map-more-button');
    await page.click('#compare-button');
    // The diff is the API's work: over a minute on a loaded 2-core machine.
    await page.waitForSelector('#change-list', { state: 'attached', timeout: 90_000 });
    await waitFor('diff drawn', async () => /From/.test(await status(page)));
    expect(await pageWidth(page)).to.be.at.most(PHONE.width);
    for (const id of ['#diff-from', '#diff-to', '.diff-form button[type=submit]', '.diff-form a.button', '#fit', '#map-more-button']) await reachable(page, id);
    if (process.env.SCREENSHOTS) {
      await page.waitForTimeout(400);
      await page.screenshot({ path: `${DOCS}web-compare-phone.png` });
    }
    expectNoProblems(w!);
  });

  it('the map\'s dialogs keep Save and Cancel on screen at 390x844 and 1440x900: + Add\'s four, and editing a host with many addresses, ports and services', async () => {
    for (const viewport of [PHONE, DESKTOP]) {
      const page = await openMap(viewport);
      const size = `${viewport.width}x${viewport.height}`;
      for (const kind of ['host', 'subnet', 'dependency', 'tag']) {
        if (viewport === PHONE) await page.click('#map-more-button');
        await page.click('#add-menu');
        await page.click(`#add-menu-items [data-kind=${kind}]`);
        await page.waitForSelector('dialog[open] button[type=submit]');
        await dialogButtonsInView(page, `the new ${kind} dialog at ${size}`);
        await page.keyboard.press('Escape');
        await page.waitForSelector('dialog[open]', { state: 'detached' });
        if (viewport === PHONE) await page.click('#map-more-button');
      }
      if (viewport === PHONE) await page.click('.sheet-toggle');
      await page.click(`#host-list [data-host-id="${world.net.hosts['web-01'].id}"]`);
      await page.click('#details #edit-host');
      await page.waitForSelector('dialog[open] button[type=submit]');
      await dialogButtonsInView(page, `editing web-01 at ${size}`);
      expectNoProblems(w!);
      await w!.close();
      w = undefined;
    }
  });

  it('at 1440 px the toolbar is one row with every tool, no More, the history slider wide; narrowed to 390 px it folds, widened again it unfolds', async () => {
    const page = await openMap(DESKTOP);
    expect(await page.$('#map-more-button')).to.equal(null);
    const rows = new Set<number>();
    for (const id of TOOLS) {
      await reachable(page, id);
      expect(await page.$eval(id, (el) => !!el.closest('.map-tools')), id).to.equal(true);
      const box = (await page.locator(id).boundingBox())!;
      rows.add(Math.round(box.y + box.height / 2));
    }
    expect(Math.max(...rows) - Math.min(...rows), 'one row').to.be.at.most(4);
    await page.click('#add-menu');
    for (const kind of ['host', 'subnet', 'dependency', 'tag']) await reachable(page, `#add-menu-items [data-kind=${kind}]`);
    await page.keyboard.press('Escape');
    // The history slider keeps a usable width beside its long summary, its step buttons at its ends.
    await page.click('#history-button');
    await waitFor('history laid out', async () => /As of/.test(await status(page)));
    expect((await page.locator('#time-slider').boundingBox())!.width, 'slider width').to.be.at.least(200);
    await page.click('#time-previous');
    expect(await page.$eval('#time-slider', (el: HTMLInputElement) => Number(el.max) - Number(el.value))).to.equal(1);
    await page.setViewportSize(PHONE);
    await page.waitForSelector('#map-more-button');
    expect(await page.isVisible('#tag-filter')).to.equal(false);
    await page.setViewportSize(DESKTOP);
    await waitFor('unfolded', async () => !(await page.$('#map-more-button')));
    for (const id of TOOLS) await reachable(page, id);
    expectNoProblems(w!);
  });
});
