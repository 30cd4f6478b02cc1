// Issue 40.1 and 40.2 on the realistic network (scripts/realisticNetwork.ts) in real headless
// Chromium, at 1440x900 and 390x844, in every view, at Fit and zoomed in: no box drawn overlaps
// another (counted from the positions drawn on screen: elements, containers and cards), no label
// or title is drawn cut (none ends in "…", each lies inside its box), and at Fit large groups are
// summary cards (a count, kinds, offline and new) that open in place; in workloads and in History at
// Fit no element is drawn without a name. Then the network changes
// under a stored layout — a host gains two services, a host is added — and still nothing overlaps,
// also after a reload. The last test changes the network, so it runs last.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { PASSWORD, uniqueEmail } from '../support/world.js';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, mapSnapshot, mapTitles, openPage, realisticWorld, signIn, waitForMap, type WatchedPage } from './browser.js';

const SIZES = [{ width: 1440, height: 900 }, { width: 390, height: 844 }];
const VIEWS = ['l3', 'workloads', 'application', 'l2'];
/** Each view's drawing has nodes of a kind no other view has. */
const KIND_OF_VIEW: Record<string, string> = { workloads: 'service:', application: 'tag:', l2: 'interface:', l3: 'subnet:' };

type Snapshot = Awaited<ReturnType<typeof mapSnapshot>>;
interface ScreenBox { id: string; x1: number; y1: number; x2: number; y2: number }

/** The boxes drawn on screen: every node shown (not absent at an instant, not hidden under a card). */
export function drawnBoxes(snapshot: Snapshot): Array<ScreenBox & { parent?: string }> {
  return Object.entries(snapshot)
    .filter(([, n]) => n.kind && !n.classes.includes('absent') && !n.classes.includes('in-card'))
    .map(([id, n]) => ({ id, parent: (n as { parent?: string }).parent, x1: n.screenX - n.screenWidth! / 2, x2: n.screenX + n.screenWidth! / 2, y1: n.screenY - n.screenHeight! / 2, y2: n.screenY + n.screenHeight! / 2 }));
}

/** Pairs of boxes that overlap on screen (by more than half a pixel each way), a container with its own elements excepted. */
export function overlapping(snapshot: Snapshot): string[] {
  const boxes = drawnBoxes(snapshot);
  const out: string[] = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, b] = [boxes[i]!, boxes[j]!];
      if (a.parent === b.id || b.parent === a.id) continue;
      if (Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1) > 0.5 && Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1) > 0.5) out.push(`${a.id} × ${b.id}`);
    }
  }
  return out;
}

/** Labels and titles drawn cut: with "…", or outside their box (labels), or wider than it (titles, card lines). */
export function cutLabels(snapshot: Snapshot, titles: Awaited<ReturnType<typeof mapTitles>>): string[] {
  const out: string[] = [];
  for (const [id, n] of Object.entries(snapshot)) {
    if (!n.kind || !n.label || n.classes.includes('in-card') || n.classes.includes('absent')) continue;
    if (n.label.includes('…')) out.push(`${id}: "${n.label}"`);
    const l = (n as { labelBox?: { x1: number; y1: number; x2: number; y2: number } }).labelBox;
    const [x1, x2, y1, y2] = [n.screenX - n.screenWidth! / 2, n.screenX + n.screenWidth! / 2, n.screenY - n.screenHeight! / 2, n.screenY + n.screenHeight! / 2];
    if (l && (l.x1 < x1 - 1 || l.x2 > x2 + 1 || l.y1 < y1 - 1 || l.y2 > y2 + 1)) out.push(`${id}: "${n.label}" drawn outside its box`);
  }
  for (const t of titles) {
    if (t.hidden) continue;
    if (t.text.includes('…') || t.cut) out.push(`title ${t.id}: "${t.text}"${t.cut ? ' cut by its box' : ''}`);
  }
  return out;
}

/** What reads at Fit as a summary card: a summary node's label, or a container drawn as a card (its lines). */
export function summaryCards(snapshot: Snapshot): Array<{ id: string; lines: string[] }> {
  return Object.entries(snapshot).flatMap(([id, n]) => {
    const card = (n as { card?: string[] }).card;
    if (card?.length) return [{ id, lines: card }];
    if (n.kind === 'summary' && n.label && !n.classes.includes('in-card')) return [{ id, lines: n.label.split('\n') }];
    return [];
  });
}

/** Elements drawn with no name (not under a card, not absent at the instant): what a zoom shows that cannot be read. */
export function unnamedElements(snapshot: Snapshot): string[] {
  return Object.entries(snapshot)
    .filter(([, n]) => n.kind && n.classes.includes('element') && !n.classes.includes('in-card') && !n.classes.includes('absent') && !n.classes.includes('filtered') && !n.label)
    .map(([id]) => id);
}

/** l2: hosts (a host holding its ports) drawn with no title and not under a card. */
export function unnamedHosts(snapshot: Snapshot, titles: Awaited<ReturnType<typeof mapTitles>>): string[] {
  return titles.filter((t) => t.id.startsWith('host:') && snapshot[t.id] && !snapshot[t.id]!.classes.includes('in-card') && t.hidden).map((t) => t.id);
}

/** Containers drawn as cards with nothing on them (no title, no line), not under another card: boxes that say nothing. */
export function blankCards(snapshot: Snapshot, titles: Awaited<ReturnType<typeof mapTitles>>): string[] {
  return titles.filter((t) => t.card && t.hidden && snapshot[t.id] && !snapshot[t.id]!.classes.includes('in-card')).map((t) => t.id);
}

describe('web map: labels whole or not at all, summary cards at Fit, no box over another (Chromium, realistic network)', function () {
  this.timeout(240_000);
  const world = realisticWorld();
  let w: WatchedPage | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  const mapPath = (view = 'l3') => `/networks/${world.user.networkId}/topology?view=${view}`;
  async function openMap(viewport: { width: number; height: number }, view = 'l3'): Promise<Page> {
    const viewer = { email: uniqueEmail('viewer'), password: PASSWORD };
    await world.owner('POST', '/api/v1/users', { ...viewer, permissions: 'Admin' });
    w = await openPage(world.browser, world.app.url, [], viewport);
    await signIn(w.page, world.app.url, viewer, mapPath(view));
    // (The first map of the file waits for its first layout, on a loaded machine.)
    await w.page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 90_000 });
    await drawn(w.page, view);
    return w.page;
  }
  /** The view is drawn at its layout (not "Laying out…"), and the camera stopped moving. */
  async function drawn(page: Page, view: string) {
    await waitFor(`the ${view} view drawn`, async () => Object.keys(await mapSnapshot(page)).some((id) => id.startsWith(KIND_OF_VIEW[view]!)) && !/Laying out/.test((await page.textContent('.status')) ?? ''));
    await settled(page);
  }
  async function settled(page: Page) {
    let last = '';
    for (let i = 0; i < 40; i++) {
      const now = JSON.stringify(Object.values(await mapSnapshot(page)).slice(0, 30).map((n) => [Math.round(n.screenX), Math.round(n.screenY), n.label, n.classes.includes('in-card')]));
      if (now === last) return;
      last = now;
      await page.waitForTimeout(120);
    }
  }
  async function check(page: Page, what: string) {
    const snapshot = await mapSnapshot(page);
    expect(overlapping(snapshot), `${what}: boxes over one another`).to.deep.equal([]);
    expect(cutLabels(snapshot, await mapTitles(page)), `${what}: labels cut`).to.deep.equal([]);
    return snapshot;
  }

  for (const size of SIZES) {
    it(`at ${size.width}x${size.height}, in every view at Fit and zoomed in: no box over another, no label cut; summary cards at Fit in l3 and workloads`, async () => {
      const page = await openMap(size);
      for (const view of VIEWS) {
        if (view !== 'l3') {
          await page.selectOption('#view', view);
          await drawn(page, view);
        }
        await page.click('#fit');
        await settled(page);
        const atFit = await check(page, `${view} at Fit`);
        const cards = summaryCards(atFit);
        if (view === 'l3' || view === 'workloads') {
          // The office's 95 quiet workstations: a card with their count and kind (on a phone, in l3, the office's own card).
          // (On a phone a card may be too small on screen for more than its count.)
          expect(cards.some((c) => /^(95|114) hosts$/.test(c.lines[0]!) && (size.width < 1440 || c.lines.some((l) => /^95 workstations/.test(l)))), `${view}: ${JSON.stringify(cards)}`).to.equal(true);
        }
        // At Fit every element is named or under a card (what Fit shows reads): elements with no label are few.
        const elements = Object.values(atFit).filter((n) => n.kind && n.classes.includes('element') && !n.classes.includes('in-card'));
        const unnamed = elements.filter((n) => !n.label);
        if (size.width >= 1440) expect(unnamed.length, `${view} at Fit: ${unnamed.length} of ${elements.length} elements unnamed`).to.be.at.most(Math.floor(elements.length * 0.25));
        // Workloads: every service is named or under its host's card, also in a host too narrow for
        // its one service's name (pve-01's proxmox, fw-01's opnsense). On a phone the element outside
        // any container (the ghost of dns-01's unbound) is left out: nothing folds it, and at that zoom
        // no name fits its box.
        if (view === 'workloads') {
          const unnamedIds = unnamedElements(atFit).filter((id) => size.width >= 1440 || (atFit[id] as { parent?: string }).parent);
          expect(unnamedIds, 'workloads at Fit: elements drawn without a name').to.deep.equal([]);
        }
        if (view === 'l2') {
          // The switch with the hosts off its ports, too small to name at Fit: one card of them (count, kinds), no host drawn unnamed.
          expect(cards.some((c) => /^3\d hosts$/.test(c.lines[0]!)), `l2: ${JSON.stringify(cards)}`).to.equal(true);
          const unnamedHostIds = unnamedHosts(atFit, await mapTitles(page));
          expect(unnamedHostIds, 'l2 at Fit: hosts unnamed').to.deep.equal([]);
        }
        // No card says nothing: boxes too small for their names (a phone at Fit) are drawn together as one card that counts them.
        expect(blankCards(atFit, await mapTitles(page)), `${view} at Fit: blank cards`).to.deep.equal([]);
        for (let zoom = 1; zoom <= 3; zoom++) {
          await page.click('button[aria-label="Zoom in"]');
          await page.click('button[aria-label="Zoom in"]');
          await settled(page);
          await check(page, `${view} zoomed in ×${(1.25 ** (2 * zoom)).toFixed(1)}`);
        }
      }
      expectNoProblems(w!);
    });
  }

  it('at 390x844 the office subnet is a card at Fit (hosts, kinds, new and offline counts) that opens in place: its elements named, nothing moved', async () => {
    const page = await openMap(SIZES[1]!);
    await page.click('#fit');
    await settled(page);
    const office = `subnet:${world.net.subnets.office.id}`;
    const before = await mapSnapshot(page);
    const card = (before[office] as { card?: string[] }).card;
    expect(card, JSON.stringify(summaryCards(before))).to.be.an('array');
    expect(card![0]).to.match(/^11\d hosts$/);
    expect(card!.join(' | ')).to.match(/workstations/);
    // Its elements are under it, not drawn.
    const inside = Object.entries(before).filter(([, n]) => (n as { parent?: string }).parent === office);
    expect(inside.length).to.be.greaterThan(10);
    expect(inside.every(([, n]) => n.classes.includes('in-card'))).to.equal(true);
    // A tap on the card: the view zooms in on it, its elements are drawn and named where they were.
    const o = before[office]!;
    await page.mouse.click(o.screenX, o.screenY);
    await waitFor('the card opened', async () => !(await mapSnapshot(page))[office]!.classes.includes('in-card') && !(await mapSnapshot(page) as any)[office].card);
    await settled(page);
    const after = await check(page, 'the office opened');
    const opened = Object.entries(after).filter(([, n]) => (n as { parent?: string }).parent === office);
    expect(opened.some(([, n]) => n.classes.includes('in-card'))).to.equal(false);
    expect(opened.filter(([, n]) => n.label).length * 2).to.be.at.least(opened.length);
    for (const [id, n] of opened) expect([n.x, n.y], id).to.deep.equal([before[id]!.x, before[id]!.y]);
    expectNoProblems(w!);
  });

  it('at 390x844 workloads at Fit draws the hosts too small for their names as blocks that count them; a tap opens one in place, its hosts named', async () => {
    const page = await openMap(SIZES[1]!, 'workloads');
    await page.click('#fit');
    await settled(page);
    const before = await mapSnapshot(page);
    // A block: a host's box drawn as a card over others (hidden under it) whose first line counts them.
    const blocks = Object.entries(before).filter(([, n]) => n.kind === 'host' && /^\d+ hosts$/.test(((n as { card?: string[] }).card ?? [])[0] ?? ''));
    expect(blocks.length, JSON.stringify(summaryCards(before))).to.be.at.least(2);
    const hidden = Object.entries(before).filter(([, n]) => n.kind === 'host' && n.classes.includes('in-card'));
    const counted = blocks.reduce((k, [, n]) => k + Number(/^(\d+)/.exec((n as { card: string[] }).card[0]!)![1]), 0);
    // (Each block's hosts: its own and those under it.)
    expect(counted).to.equal(blocks.length + hidden.length);
    const [id, block] = blocks.sort((a, b) => b[1].screenWidth! * b[1].screenHeight! - a[1].screenWidth! * a[1].screenHeight!)[0]!;
    await page.mouse.click(block.screenX, block.screenY);
    await waitFor('the block opened', async () => !((await mapSnapshot(page))[id] as { card?: string[] }).card?.length);
    await settled(page);
    const after = await check(page, 'the block opened');
    const titles = await mapTitles(page);
    expect(titles.find((t) => t.id === id)!.hidden, 'its first host titled').to.equal(false);
    expect(after[id]!.classes.includes('in-card')).to.equal(false);
    expectNoProblems(w!);
  });

  it('a summary card of quiet hosts opens in place with a tap (the API draws them one by one)', async () => {
    const page = await openMap(SIZES[0]!, 'workloads');
    const summary = Object.entries(await mapSnapshot(page)).find(([, n]) => n.kind === 'summary')!;
    expect(summary, 'a summary card').to.not.equal(undefined);
    expect(summary[1].label).to.match(/^95 hosts\noffice · 10\.10\.1\.0\/24\n95 workstations/);
    await page.mouse.click(summary[1].screenX, summary[1].screenY);
    const ws = `host:${world.net.hosts['ws-001'].id}`;
    await waitFor('ws-001 drawn', async () => !!(await mapSnapshot(page))[ws] && !/Laying out/.test((await page.textContent('.status')) ?? ''));
    await settled(page);
    await page.click('#fit');
    await settled(page);
    await check(page, 'workloads with its workstations one by one');
    expectNoProblems(w!);
  });

  for (const size of SIZES) {
    it(`at ${size.width}x${size.height}, History at Fit: every box drawn is named or under a card, none over another, no label cut`, async () => {
      const page = await openMap(size);
      await page.click('#history-button');
      await page.waitForSelector('#time-slider');
      await page.waitForFunction(() => /As of/.test(document.querySelector('.status')?.textContent ?? ''), undefined, { timeout: 90_000 });
      await page.$eval('#time-slider', (el: HTMLInputElement) => { el.value = String(Math.round(Number(el.max) / 2)); el.dispatchEvent(new Event('input')); });
      await settled(page);
      await page.click('#fit');
      await settled(page);
      const atFit = await check(page, 'History at Fit');
      expect(unnamedElements(atFit), 'History at Fit: elements drawn without a name').to.deep.equal([]);
      expectNoProblems(w!);
    });
  }

  it('at 390x844, l2 at Fit: the switch and the hosts off its ports are one card that opens in place where it was tapped, its hosts named', async () => {
    const page = await openMap(SIZES[1]!, 'l2');
    await page.click('#fit');
    await settled(page);
    const before = await mapSnapshot(page);
    const sw = `host:${world.net.hosts['core-sw-01'].id}`;
    const card = (before[sw] as { card?: string[] }).card;
    expect(card, JSON.stringify(summaryCards(before))).to.be.an('array');
    expect(card![0]).to.match(/^3\d hosts$/);
    // Its hosts are under it; the card covers them all.
    const hosts = Object.entries(before).filter(([id, n]) => id.startsWith('host:') && id !== sw && n.classes.includes('container'));
    expect(hosts.length).to.be.greaterThan(20);
    expect(hosts.every(([, n]) => n.classes.includes('in-card'))).to.equal(true);
    const c = before[sw]!;
    const tap = { x: c.screenX - c.screenWidth! / 4, y: c.screenY };
    await page.mouse.click(tap.x, tap.y);
    // (The switch itself may stay a card of its ports.)
    await waitFor('the group card opened', async () => !(await mapSnapshot(page))[hosts[0]![0]]!.classes.includes('in-card'));
    await settled(page);
    const after = await check(page, 'the switch opened');
    const shown = Object.entries(after).filter(([id, n]) => id.startsWith('host:') && id !== sw && !n.classes.includes('in-card'));
    expect(shown.length).to.equal(hosts.length);
    // The hosts on screen (the part of the switch tapped) are named.
    const canvas = (await page.locator('#map-canvas').boundingBox())!;
    const titles = new Map((await mapTitles(page)).map((t) => [t.id, t]));
    const onScreen = shown.filter(([, n]) => n.screenX > canvas.x && n.screenX < canvas.x + canvas.width && n.screenY > canvas.y && n.screenY < canvas.y + canvas.height);
    expect(onScreen.length).to.be.greaterThan(2);
    expect(onScreen.filter(([id]) => !titles.get(id)!.hidden).length * 2, JSON.stringify(onScreen.map(([id]) => titles.get(id)))).to.be.at.least(onScreen.length);
    for (const [id, n] of shown) expect([n.x, n.y], id).to.deep.equal([before[id]!.x, before[id]!.y]);
    expectNoProblems(w!);
  });

  it('after a host gains two services and a host is added under a stored layout, no box overlaps another in any view, also after a reload', async () => {
    const page = await openMap(SIZES[0]!);
    const reopen = async (view: string) => {
      await page.goto(`${world.app.url}${mapPath(view)}`);
      await waitForMap(page);
      await drawn(page, view);
    };
    // Every view laid out and stored before the changes.
    for (const view of VIEWS) await reopen(view);
    const { owner, net } = world;
    // web-02 (in the middle of the servers subnet) gains two services: its box grows by two lines.
    const web02 = net.hosts['web-02'];
    const host = await owner('GET', `/api/v1/hosts/${web02.id}`);
    const ports = [...host.ports, { number: 8443, protocol: 'Tcp' }, { number: 9113, protocol: 'Tcp' }];
    const saved = await owner('PUT', `/api/v1/hosts/${web02.id}`, {
      id: host.id, name: host.name, hidden: host.hidden, tags: host.tags, hostname: host.hostname, virtualization: host.virtualization, ip_addresses: host.ip_addresses, ports,
      services: [...host.services, { name: 'varnish', service_definition: 'Varnish', bindings: [] }, { name: 'nginx-exporter', service_definition: 'Prometheus', bindings: [] }],
    });
    expect(saved.services).to.have.length(host.services.length + 2);
    for (const view of VIEWS) {
      await reopen(view);
      await page.click('#fit');
      await settled(page);
      const snapshot = await check(page, `${view} after web-02 grew`);
      if (view === 'l3') expect(snapshot[`ip_address:${saved.ip_addresses[0].id}`], 'web-02 in l3').to.not.equal(undefined);
    }
    // A host added to the servers subnet, with services (not folded).
    await owner('POST', '/api/v1/hosts', {
      network_id: world.user.networkId, name: 'web-04', hostname: 'web-04.hq.lan', ip_addresses: [{ subnet_id: net.subnets.servers.id, ip_address: '10.10.2.28' }],
      ports: [{ number: 443, protocol: 'Tcp' }], services: [{ name: 'nginx', service_definition: 'Nginx' }, { name: 'php-fpm', service_definition: 'PHP' }],
    });
    for (const view of VIEWS) {
      await reopen(view);
      for (const step of ['Fit', 'zoomed']) {
        if (step === 'Fit') await page.click('#fit');
        else for (let i = 0; i < 4; i++) await page.click('button[aria-label="Zoom in"]');
        await settled(page);
        const snapshot = await check(page, `${view} at ${step} after web-04 was added`);
        if (view === 'l3') expect(Object.values(snapshot).some((n) => n.kind === 'ip_address' && /web-04/.test(n.label ?? '')) || step === 'Fit', 'web-04 drawn and named, zoomed in').to.equal(true);
      }
    }
    expectNoProblems(w!);
  });
});
