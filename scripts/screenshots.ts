// `npm run screenshots [-- <base url>]`: the pictures of the web application in docs/web.md (docs/*.png),
// taken in headless Chromium against a running service (`npm start`, default http://localhost:3000).
// It registers a new organization and builds the realistic network (scripts/realisticNetwork.ts,
// ~20 s through the API), then takes every screen at 1440x900 (docs/web-<what>.png) and at a
// phone's 390x844 (docs/web-<what>-phone.png). It waits for what is drawn, never for a fixed time
// beyond a short settle: the map is ready, its camera stopped moving.
import { chromium, type Browser, type Page } from 'playwright-core';
import { fileURLToPath } from 'node:url';
import { ensureChromium } from './services.js';
import { apiCaller, buildRealisticNetwork, type RealisticNetwork } from './realisticNetwork.js';

const base = process.argv[2] ?? `http://localhost:${process.env.PORT ?? 3000}`;
const docs = fileURLToPath(new URL('../docs/', import.meta.url));
const stamp = Date.now();
const password = 'plum harbor lantern';
const SIZES = [{ suffix: '', viewport: { width: 1440, height: 900 } }, { suffix: '-phone', viewport: { width: 390, height: 844 } }];

async function login(email: string): Promise<string> {
  const res = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (!res.ok) throw new Error(`login ${email}: ${res.status} ${await res.text()}`);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

const ownerEmail = `demo-${stamp}@example.test`;
const registered = await apiCaller(base, {})('POST', '/api/auth/register', { email: ownerEmail, password, organization_name: 'Demo' });
const owner = apiCaller(base, { cookie: await login(ownerEmail) });
console.log('building the realistic network…');
const net = await buildRealisticNetwork(owner, registered.network_ids[0]);
const topology = (view: string) => `/networks/${net.networkId}/topology?view=${view}`;

/** Resolves once what the map draws stopped moving on screen (a focus animates for 300 ms). */
async function settled(page: Page) {
  let last = '';
  for (let i = 0; i < 50; i++) {
    const now = await page.evaluate(() => JSON.stringify(Object.values((window as any).netinventoryMap.snapshot()).slice(0, 40).map((n: any) => [Math.round(n.screenX), Math.round(n.screenY), n.label])));
    if (now === last) break;
    last = now;
    await page.waitForTimeout(150);
  }
  await page.evaluate(() => document.fonts.ready);
  await page.waitForTimeout(300); // the containers' HTML boxes follow the canvas on the next frame
}

async function openMap(page: Page, view: string) {
  await page.goto(base + topology(view));
  await page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 60_000 });
  await settled(page);
}

/** Zoomed on a container of the map (as its entry in the list of containers does), with its details drawn. */
async function zoomOn(page: Page, containerLabel: string) {
  await page.evaluate((label) => {
    const entry = [...document.querySelectorAll<HTMLButtonElement>('#container-list button')].find((b) => b.textContent!.startsWith(label));
    if (!entry) throw new Error(`no container "${label}" in the list`);
    entry.click();
  }, containerLabel);
  await settled(page);
}

async function fitShot(page: Page, view: string, suffix: string) {
  await page.click('#fit');
  await settled(page);
  await shoot(page, `${view}-fit`, suffix);
}

async function shoot(page: Page, name: string, suffix: string) {
  await page.screenshot({ path: `${docs}web-${name}${suffix}.png` });
  console.log(`docs/web-${name}${suffix}.png`);
}

async function screens(browser: Browser, suffix: string, viewport: { width: number; height: number }, n: RealisticNetwork) {
  // A user of its own per size: the owner's rate-limit bucket is spent on building, and a page reads a lot.
  const email = `viewer-${stamp}${suffix}@example.test`;
  await owner('POST', '/api/v1/users', { email, password, permissions: 'Admin' });
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  // The web application loads nothing from elsewhere: say so if it ever does.
  page.on('request', (r) => { if (!r.url().startsWith(`${new URL(base).origin}/`) && !/^(data|blob):/.test(r.url())) console.error(`request to another origin: ${r.url()}`); });
  try {
    await page.goto(`${base}/signin?next=${encodeURIComponent(topology('l3'))}`);
    await page.fill('#email', email);
    await page.fill('#password', password);
    await page.click('button[type=submit]');
    await page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 60_000 });
    await settled(page);
    await shoot(page, 'l3', suffix);
    // On a phone the map opens where names read; Fit (the whole drawing, large groups as cards) too.
    if (suffix) await fitShot(page, 'l3', suffix);
    await zoomOn(page, 'servers');
    await page.waitForFunction((id) => /:443/.test((window as any).netinventoryMap.snapshot()[id]?.label ?? ''), `ip_address:${n.hosts['web-01'].ip_addresses[0].id}`);
    await shoot(page, 'l3-zoomed', suffix);

    // Each view at Fit, then zoomed on its busiest container (the Docker host, the shop, the switch).
    for (const [view, container] of [['workloads', 'docker-01'], ['application', 'shop'], ['l2', 'core-sw-01']] as const) {
      await openMap(page, view);
      await shoot(page, view, suffix);
      if (suffix) await fitShot(page, view, suffix);
      await zoomOn(page, container);
      await shoot(page, `${view}-zoomed`, suffix);
    }

    // A host selected from the search: centred, what it is linked to stands out, its details open.
    await openMap(page, 'l3');
    // (On a phone the search is in the host list's sheet.)
    if (await page.isVisible('.sheet-toggle')) await page.click('.sheet-toggle');
    await page.fill('#host-search', 'web-01');
    await page.press('#host-search', 'Enter');
    await page.waitForSelector('#details #edit-host');
    await settled(page);
    await shoot(page, 'map-selected', suffix);
    await page.click('#edit-host');
    await page.waitForSelector('dialog[open]');
    await page.waitForTimeout(300);
    await shoot(page, 'edit-host', suffix);
    await page.keyboard.press('Escape');

    // History at a middle tick of the grouped history.
    await openMap(page, 'l3');
    await page.click('#history-button');
    await page.waitForSelector('#time-slider');
    await page.waitForFunction(() => /As of/.test(document.querySelector('.status')?.textContent ?? ''), undefined, { timeout: 60_000 });
    await page.$eval('#time-slider', (el: HTMLInputElement) => { el.value = String(Math.round(Number(el.max) / 2)); el.dispatchEvent(new Event('input')); });
    await settled(page);
    await shoot(page, 'history', suffix);

    // Compare by default: the last changes, marked on the map and listed.
    await openMap(page, 'l3');
    if (await page.isVisible('#map-more-button')) await page.click('#map-more-button'); // (on a phone, Compare is behind More)
    await page.click('#compare-button');
    await page.waitForSelector('#change-list', { state: 'attached' }); // (on a phone, in the closed host list's sheet)
    await page.waitForFunction(() => /From/.test(document.querySelector('.status')?.textContent ?? ''), undefined, { timeout: 60_000 });
    await settled(page);
    await shoot(page, 'compare', suffix);

    await page.goto(`${base}/hosts`);
    await page.waitForSelector('table.list tbody tr');
    await page.waitForTimeout(300);
    await shoot(page, 'hosts', suffix);
    await page.goto(`${base}/hosts/${n.hosts['web-01'].id}`);
    await page.waitForSelector('.host-details');
    await page.waitForTimeout(300);
    await shoot(page, 'host', suffix);

    if (!suffix) {
      // The API docs (Swagger UI) with one operation open, its example body shown.
      await page.goto(`${base}/api/docs#/Hosts/createHost`);
      const createHost = page.locator('#operations-Hosts-createHost');
      await createHost.waitFor({ timeout: 30_000 });
      if (!(await createHost.locator('.opblock-body').count())) await createHost.locator('.opblock-summary').click();
      await createHost.locator('.opblock-body').waitFor();
      await createHost.scrollIntoViewIfNeeded();
      await page.evaluate(() => window.scrollBy(0, -12));
      await page.waitForTimeout(400);
      await page.screenshot({ path: `${docs}api-docs.png` });
      console.log('docs/api-docs.png');
    }
  } finally {
    await context.close();
  }
}

const browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'] });
try {
  for (const { suffix, viewport } of SIZES) await screens(browser, suffix, viewport, net);
  console.log(`signed in as ${ownerEmail} (password "${password}")`);
} finally {
  await browser.close();
}
