// Real headless Chromium for the web application's tests (Debian's chromium, found or installed by
// scripts/services.ts; playwright-core drives it and downloads nothing). Each page records what
// must never happen: a console error, an uncaught exception, a request to another origin.
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'chai';
import { call, expectOk } from '../support/client.js';
import { login, PASSWORD, uniqueEmail } from '../support/world.js';
import type { Worker } from 'bullmq';
import type { AppConfig } from '../../src/config.js';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { apiCaller, buildRealisticNetwork, type ApiCall, type RealisticNetwork } from '../../scripts/realisticNetwork.js';
import { workerServicesFor } from '../workers/support.js';
import { startTopologyLayout } from '../../workers/topologyLayout.js';

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    // As root in a container: no sandbox; no background traffic to Google's hosts (the network is closed).
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

export interface WatchedPage {
  page: Page;
  /** Console errors, page errors and requests to another origin, in order. */
  problems: string[];
  close(): Promise<void>;
}

export async function openPage(browser: Browser, appUrl: string, allow: RegExp[] = [], viewport = { width: 1280, height: 800 }): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  const problems: string[] = [];
  const origin = new URL(appUrl).origin;
  page.on('console', (m) => { if (m.type() === 'error' && !allow.some((re) => re.test(m.text()))) problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    const url = r.url();
    if (!url.startsWith(`${origin}/`) && !/^(data|blob):/.test(url)) problems.push(`request to another origin: ${url}`);
  });
  return { page, problems, close: () => context.close() };
}

/** A new organization's Owner, registered through the API; its email and password for the sign-in page. */
export async function registerUser(appUrl: string) {
  const email = uniqueEmail('web');
  const user = expectOk(await call(appUrl, 'POST', '/api/auth/register', { body: { email, password: PASSWORD, organization_name: 'Web' } }), 201);
  return { email, password: PASSWORD, orgId: user.organization_id as string, networkId: user.network_ids[0] as string };
}

export async function signIn(page: Page, appUrl: string, user: { email: string; password: string }, path = '/') {
  await page.goto(`${appUrl}${path}`);
  await page.fill('#email', user.email);
  await page.fill('#password', user.password);
  await page.click('button[type=submit]');
}

/** What the map draws, by element id (the map screen's read-only hook); nodes with their label and its size on screen. */
export async function mapSnapshot(page: Page): Promise<Record<string, {
  x: number; y: number; screenX: number; screenY: number; screenWidth?: number; screenHeight?: number; classes: string[]; kind?: string; label?: string; fontPx?: number;
  parent?: string; labelBox?: { x1: number; y1: number; x2: number; y2: number }; card?: string[];
}>> {
  return page.evaluate(() => (window as any).netinventoryMap.snapshot());
}

/** The map's container titles as drawn: text and font size on screen (CSS px), hidden (none fits), cut by its box (never, issue 40.1), drawn as a card. */
export async function mapTitles(page: Page): Promise<Array<{ id: string; text: string; fontPx: number; hidden: boolean; cut: boolean; card: boolean }>> {
  return page.evaluate(() => (window as any).netinventoryMap.titles());
}

/** The centre of the map's canvas on screen. */
export async function mapCentre(page: Page): Promise<{ x: number; y: number }> {
  return page.evaluate(() => (window as any).netinventoryMap.centre());
}

/** How wide the page is laid out (wider than the viewport: it scrolls sideways). */
export const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth);

export async function waitForMap(page: Page) {
  await page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 20_000 });
}

/** Save (or the form's submit) and Cancel of the open dialog lie inside the viewport. */
export async function dialogButtonsInView(page: Page, what: string) {
  const { width, height } = page.viewportSize()!;
  const dialog = page.locator('dialog[open]');
  for (const button of [dialog.locator('button[type=submit]'), dialog.getByRole('button', { name: 'Cancel', exact: true })]) {
    const box = (await button.boundingBox())!;
    expect(box, `${what}: a button of the dialog`).to.not.equal(null);
    expect(box.x, `${what} at ${width}×${height}`).to.be.at.least(0);
    expect(box.y, `${what} at ${width}×${height}`).to.be.at.least(0);
    expect(box.x + box.width, `${what} at ${width}×${height}`).to.be.at.most(width);
    expect(box.y + box.height, `${what} at ${width}×${height}`).to.be.at.most(height);
  }
  // The dialog itself never scrolls sideways.
  expect(await page.evaluate(() => { const d = document.querySelector('dialog[open]')!; return d.scrollWidth <= d.clientWidth; }), what).to.equal(true);
}

export const expectNoProblems = (w: WatchedPage) => expect(w.problems, w.problems.join('\n')).to.deep.equal([]);

/**
 * What a browser test of the map needs, set up by mocha hooks this registers: Chromium (once per
 * file), and a real app with its topology-layout worker and a registered Owner, new for every test
 * or, with `perFile`, once for the file (for a network the tests only read). `ready` runs after the
 * Owner is registered (build the network there). Read the fields inside tests and hooks, not at load.
 */
export interface WebWorld {
  browser: Browser;
  app: TestApp;
  user: Awaited<ReturnType<typeof registerUser>>;
}

export function webWorld(o: { perFile?: boolean; config?: Partial<AppConfig>; ready?: (world: WebWorld) => Promise<void> } = {}): WebWorld {
  const world = {} as WebWorld;
  let layoutWorker: Worker | undefined;
  let workerServices: ReturnType<typeof workerServicesFor> | undefined;
  const start = async () => {
    world.app = await startTestApp(o.config);
    workerServices = workerServicesFor(world.app);
    layoutWorker = await startTopologyLayout(workerServices);
    world.user = await registerUser(world.app.url);
    await o.ready?.(world);
  };
  const stop = async () => {
    await layoutWorker?.close();
    await workerServices?.close();
    await world.app?.close();
  };
  before(async function () {
    this.timeout(240_000); // a realistic network takes a while to build
    world.browser = await launchBrowser();
    if (o.perFile) await start();
  });
  after(async () => {
    if (o.perFile) await stop();
    await world.browser?.close();
  });
  if (!o.perFile) {
    beforeEach(start);
    afterEach(stop);
  }
  return world;
}

/** A webWorld whose Owner has the realistic network (scripts/realisticNetwork.ts), built once for the file: its tests only read it. */
export function realisticWorld(o: { changes?: boolean } = {}): WebWorld & { net: RealisticNetwork; owner: ApiCall } {
  const world = webWorld({
    perFile: true,
    config: FIXTURE_BUILDING,
    ready: async ({ app, user }) => {
      const { cookie } = await login(app.url, user.email, user.password);
      extra.owner = apiCaller(app.url, { cookie });
      extra.net = await buildRealisticNetwork(extra.owner, user.networkId, { changes: o.changes });
    },
  });
  const extra = world as WebWorld & { net: RealisticNetwork; owner: ApiCall };
  return extra;
}
