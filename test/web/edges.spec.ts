// The map of the realistic network (issue 23.1 and 23.3) in headless Chromium: edges that exist
// (the hidden hub of "Internal DNS" is a ghost, no spoke is joined to another), a host's
// dependencies in its details panel, and the office's quiet workstations as one summary node that
// opens in place. The network is built once (~20 s through HTTP); no test changes it.
import { expect } from 'chai';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, mapSnapshot, openPage, signIn, waitForMap, realisticWorld, type WatchedPage } from './browser.js';

describe('web: edges that exist, dependencies in the panel, quiet hosts folded (Chromium)', function () {
  this.timeout(120_000);
  const world = realisticWorld({ changes: false });
  let w: WatchedPage | undefined;
  afterEach(async () => { await w?.close(); w = undefined; });

  /** The map of the network, drawn (the layout worker may take a moment: the map polls for it). */
  async function openMap(query = '') {
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, world.user, `/networks/${world.user.networkId}/topology${query}`);
    await waitForMap(w.page);
    return w;
  }

  it('on the map, no edge joins two spokes of "Internal DNS": they join the hidden hub, drawn as a ghost', async () => {
    const { page } = await openMap();
    const dns = world.net.dependencies['Internal DNS'].id;
    const hub = world.net.services['dns-01/unbound']!;
    await waitFor('the ghost drawn', async () => !!(await mapSnapshot(page))[`ghost:${hub}`]);
    const drawn = await mapSnapshot(page);
    expect(drawn[`ghost:${hub}`]!.classes).to.include('ghost');
    const edges = Object.keys(drawn).filter((id) => id.startsWith(`dependency:${dns}:`));
    expect(edges).to.have.length(4);
    const spokes = new Set(['mail-01/postfix', 'ldap-01/openldap', 'mon-01/zabbix', 'ci-01/jenkins'].map((k) => world.net.services[k]));
    for (const id of edges) {
      const [, , from, to] = id.split(':');
      expect(from, id).to.equal(hub);
      expect(spokes.has(to!), id).to.equal(true);
      expect(drawn[id]!.classes).to.include('to-ghost');
    }
    expectNoProblems(w!);
  });

  it('the details panel lists the host\'s dependencies: name, kind, its role, the other members', async () => {
    const { page } = await openMap();
    await page.fill('#host-search', 'mail-01');
    await page.press('#host-search', 'Enter');
    await page.waitForSelector('#details .host-details');
    await page.waitForFunction(() => document.querySelector('#details')?.textContent?.includes('Dependencies'));
    const rows = await page.$$eval('#details section', (sections) => {
      const deps = sections.find((s) => s.querySelector('h3')?.textContent === 'Dependencies');
      return [...(deps?.querySelectorAll('tbody tr') ?? [])].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
    });
    const byName = new Map(rows.map((r) => [r[0], r]));
    expect(byName.get('Internal DNS')).to.deep.equal(['Internal DNS', 'hub and spoke', 'spoke', 'unbound · dns-01, openldap · ldap-01, zabbix · mon-01, jenkins · ci-01']);
    expect(byName.get('Directory')!.slice(1, 3)).to.deep.equal(['hub and spoke', 'spoke']);
    expect(byName.get('Metrics')!.slice(1, 3)).to.deep.equal(['hub and spoke', 'spoke']);
    expect(rows).to.have.length(3);
    expectNoProblems(w!);
  });

  it('the office\'s quiet workstations are one summary node, listed one by one, that a click opens in place', async () => {
    const { page } = await openMap();
    const office = world.net.subnets.office.id;
    const summary = `summary:${office}`;
    const ws = world.net.hosts['ws-001'];
    const wsNode = `ip_address:${ws.ip_addresses[0].id}`;
    let drawn = await mapSnapshot(page);
    // A card (issue 40.1): its count first, then its subnet and kinds, as many lines as read whole at this zoom.
    expect(drawn[summary]).to.include({ kind: 'summary' });
    expect(drawn[summary]!.label).to.match(/^96 hosts(\n|$)/);
    expect(drawn[wsNode]).to.equal(undefined);
    // Still in the accessible list, and found by search.
    await page.fill('#host-search', 'ws-042');
    expect(await page.$$eval('#host-list .host-entry', (els) => els.map((e) => e.firstChild!.textContent!.trim()))).to.deep.equal(['ws-042']);
    await page.fill('#host-search', '');
    // The search centred its match (an animation): click where the summary is once it stands still.
    let at = '';
    await waitFor('the map standing still', async () => {
      const s = (await mapSnapshot(page))[summary]!;
      const now = `${Math.round(s.screenX)},${Math.round(s.screenY)}`;
      const still = now === at;
      at = now;
      if (!still) await page.waitForTimeout(150);
      return still;
    });
    drawn = await mapSnapshot(page);
    await page.mouse.click(drawn[summary]!.screenX, drawn[summary]!.screenY);
    await waitFor('the workstations drawn', async () => !!(await mapSnapshot(page))[wsNode]);
    drawn = await mapSnapshot(page);
    expect(drawn[summary]).to.equal(undefined);
    expect(new URL(page.url()).searchParams.get('expand')).to.equal(summary);
    expectNoProblems(w!);
  });

  it('the host list names each host\'s dependencies with its role, as the details panel does', async () => {
    const { page } = await openMap();
    await page.waitForSelector('#host-list .host-dependencies');
    const line = async (host: string) => {
      const text = await page.$eval(`#host-list li:has([data-host-id="${world.net.hosts[host].id}"]) .host-dependencies`, (e) => e.textContent ?? '');
      return text.split(' · ').sort();
    };
    expect(await line('mail-01')).to.deep.equal(['Directory: spoke', 'Internal DNS: spoke', 'Metrics: spoke']);
    expect(await line('web-01')).to.deep.equal(['Metrics: spoke', 'Sessions: spoke', 'Web shop: step 2']);
    expect(await line('ldap-01')).to.deep.equal(['Directory: hub', 'Internal DNS: spoke', 'Metrics: spoke']);
    expect(await page.$(`#host-list li:has([data-host-id="${world.net.hosts['ws-042'].id}"]) .host-dependencies`)).to.equal(null);
    expectNoProblems(w!);
  });

  it('choosing a folded host in the list opens its summary node in place and selects the host', async () => {
    const { page } = await openMap();
    const summary = `summary:${world.net.subnets.office.id}`;
    const ws = world.net.hosts['ws-042'];
    const wsNode = `ip_address:${ws.ip_addresses[0].id}`;
    expect((await mapSnapshot(page))[summary]).to.include({ kind: 'summary' });
    await page.fill('#host-search', 'ws-042');
    await page.click(`#host-list [data-host-id="${ws.id}"]`);
    await waitFor('ws-042 drawn and selected', async () => (await mapSnapshot(page))[wsNode]?.classes.includes('highlighted') ?? false);
    expect((await mapSnapshot(page))[summary]).to.equal(undefined);
    expect(new URL(page.url()).searchParams.get('expand')).to.equal(summary);
    await page.waitForFunction(() => document.querySelector('#details .host-details h2')?.textContent === 'ws-042');
    expect(await page.getAttribute(`#host-list [data-host-id="${ws.id}"]`, 'aria-pressed')).to.equal('true');
    expectNoProblems(w!);
  });

  it('Enter on a summary node\'s entry in the container list opens it', async () => {
    const { page } = await openMap();
    const summary = `summary:${world.net.subnets.office.id}`;
    const wsNode = `ip_address:${world.net.hosts['ws-001'].ip_addresses[0].id}`;
    await page.click('details.containers > summary');
    await page.focus(`#container-list li[data-node-id="${summary}"] button`);
    await page.keyboard.press('Enter');
    await waitFor('the workstations drawn', async () => !!(await mapSnapshot(page))[wsNode]);
    expect((await mapSnapshot(page))[summary]).to.equal(undefined);
    expect(new URL(page.url()).searchParams.get('expand')).to.equal(summary);
    expectNoProblems(w!);
  });
});
