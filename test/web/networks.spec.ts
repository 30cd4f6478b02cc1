// The Networks page and a network's page (issue 40.4) in real headless Chromium against a real app:
// create a network, rename it and set how long a host may stay offline before it is stale
// (host_expiry_days), use it (the header's switcher follows), delete one after a question that says
// first what it holds (hosts, services, subnets, daemons: GET /api/v1/networks/<id>/contents), and a
// network's alert rules (create, edit, delete). Dialogs keep Save and Cancel in sight at 390×844
// and 1440×900. SCREENSHOTS=1 writes docs/web-networks-{1440,390}.png (the list),
// docs/web-networks-network-{1440,390}.png (a network with its alert rules) and
// docs/web-networks-delete-390.png (the question before a deletion), docs/web-networks-rule-form-390.png
// (the alert rule form on a phone: its fields scroll, Save and Cancel stay).
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createUser, login, PASSWORD } from '../support/world.js';
import { Db } from '../../src/core/db.js';
import { setOperator } from '../../src/core/operators.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';
import { waitFor } from '../workers/support.js';
import { dialogButtonsInView, expectNoProblems, openPage, pageWidth, signIn, webWorld, type WatchedPage } from './browser.js';

const DOCS = 'docs/';
const SIZES = [[1440, 900], [390, 844]] as const;

describe('web application: the Networks page and a network\'s alert rules (Chromium)', function () {
  this.timeout(90_000);
  let w: WatchedPage | undefined;
  let session: Credential;
  const world = webWorld({ ready: async ({ app, user }) => { session = await login(app.url, user.email, user.password); } });
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });
  const api = async (method: string, path: string, body?: unknown) => expectOk(await call(world.app.url, method, path, { auth: session, body }));
  const card = (page: Page, name: string) => page.locator('article.network-card', { has: page.locator('h2', { hasText: new RegExp(`^${name}$`) }) });

  /** A network holding a host with 2 services, a subnet and a daemon (which reports its own host). */
  async function stockedNetwork(name: string) {
    const net = expectOk(await call(world.app.url, 'POST', '/api/v1/networks', { auth: session, body: { name } }), 201);
    const subnet = await createSubnet(world.app.url, session, net.id);
    await createHostWithChildren(world.app.url, session, net.id, subnet.id);
    const d = daemonClient(world.app.url, (await createDaemonKey(world.app.url, session, net.id)).key);
    await registerDaemon(d, net.id);
    return net;
  }

  it('creates a network, renames it and sets when its hosts go stale, uses it, and deletes one after saying what it holds', async () => {
    const lab = await stockedNetwork('Lab');
    const contents = await api('GET', `/api/v1/networks/${lab.id}/contents`);
    expect(contents).to.include({ services: 2, subnets: 1, daemons: 1 });
    expect(contents.hosts).to.be.at.least(1);

    w = await openPage(world.browser, world.app.url, [], { width: 1440, height: 900 });
    const { page } = w;
    await signIn(page, world.app.url, world.user, '/networks');
    await card(page, 'Lab').locator('.network-counts', { hasText: 'services' }).waitFor();
    expect(await card(page, 'Lab').locator('.network-counts').textContent())
      .to.equal(`${contents.hosts} host${contents.hosts === 1 ? '' : 's'} · 2 services · 1 subnet · 1 daemon`);

    // Create.
    await page.click('#new-network');
    let dialog = page.locator('dialog[open]');
    await dialog.getByLabel('Name', { exact: true }).fill('Branch office');
    expect(await dialog.getByLabel('Hosts are stale after (days offline)').inputValue()).to.equal('30');
    await dialogButtonsInView(page, 'the network form');
    await dialog.getByRole('button', { name: 'Create network' }).click();
    await card(page, 'Branch office').waitFor();
    const created = (await api('GET', '/api/v1/networks?limit=100') as any[]).find((n) => n.name === 'Branch office');
    expect(created).to.include({ host_expiry_days: 30 });
    // The header's switcher lists it.
    expect(await page.locator('#network-switcher option', { hasText: 'Branch office' }).count()).to.equal(1);

    // Rename it and set its hosts' expiry; the explanation says what the number means.
    await card(page, 'Branch office').getByRole('button', { name: 'Rename or edit Branch office' }).click();
    dialog = page.locator('dialog[open]');
    expect(await dialog.locator('[data-hint-for=host_expiry_days]').textContent()).to.contain('offline longer than this is shown as stale');
    await dialog.getByLabel('Name', { exact: true }).fill('Branch');
    await dialog.getByLabel('Hosts are stale after (days offline)').fill('7');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await card(page, 'Branch').locator('.network-facts', { hasText: 'stale after 7 days offline' }).waitFor();
    expect(await api('GET', `/api/v1/networks/${created.id}`)).to.include({ name: 'Branch', host_expiry_days: 7 });
    expect(await page.locator('#network-switcher option', { hasText: /^Branch$/ }).count()).to.equal(1);

    // Use it: the page marks it, the switcher shows it.
    await card(page, 'Branch').getByRole('button', { name: 'Use this network' }).click();
    await card(page, 'Branch').locator('.badge.current').waitFor();
    expect(await page.inputValue('#network-switcher')).to.equal(created.id);

    if (process.env.SCREENSHOTS) {
      for (const [width, height] of SIZES) {
        await page.setViewportSize({ width, height });
        await page.evaluate(() => document.fonts.ready);
        expect(await pageWidth(page)).to.be.at.most(width);
        await page.screenshot({ path: `${DOCS}web-networks-${width}.png` });
      }
      await page.setViewportSize({ width: 1440, height: 900 });
    }

    // Delete: the question says first what goes with it; cancelled, nothing happens.
    await card(page, 'Lab').getByRole('button', { name: 'Delete Lab' }).click();
    dialog = page.locator('dialog[open]');
    await dialog.locator('ul.network-contents').waitFor();
    expect(await dialog.locator('p').first().textContent()).to.equal('The network “Lab” holds:');
    const listed = await dialog.locator('ul.network-contents li').allTextContents();
    expect(listed.slice(0, 4)).to.deep.equal([`${contents.hosts} host${contents.hosts === 1 ? '' : 's'}`, '2 services', '1 subnet', '1 daemon']);
    expect(listed).to.include('1 daemon key');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await api('GET', `/api/v1/networks/${lab.id}`);
    if (process.env.SCREENSHOTS) {
      await page.setViewportSize({ width: 390, height: 844 });
      await card(page, 'Lab').getByRole('button', { name: 'Delete Lab' }).click();
      await page.locator('dialog[open] ul.network-contents').waitFor();
      await page.screenshot({ path: `${DOCS}web-networks-delete-390.png` });
      await page.locator('dialog[open]').getByRole('button', { name: 'Cancel' }).click();
      await page.setViewportSize({ width: 1440, height: 900 });
    }
    await card(page, 'Lab').getByRole('button', { name: 'Delete Lab' }).click();
    await page.locator('dialog[open]').getByRole('button', { name: 'Delete network and contents' }).click();
    await card(page, 'Lab').waitFor({ state: 'detached' });
    expectError(await call(world.app.url, 'GET', `/api/v1/networks/${lab.id}`, { auth: session }), 404, 'entity_not_found');
    expect(await page.locator('#network-switcher option', { hasText: /^Lab$/ }).count()).to.equal(0);

    // An empty network: the question says so, and it goes without cascade.
    await card(page, 'Branch').getByRole('button', { name: 'Delete Branch' }).click();
    dialog = page.locator('dialog[open]');
    await dialog.getByText('The network “Branch” holds nothing.').waitFor();
    await dialog.getByRole('button', { name: 'Delete network', exact: true }).click();
    await card(page, 'Branch').waitFor({ state: 'detached' });
    expectNoProblems(w);
  });

  it('the header links Webhooks for Admins and the queue dashboard for operators only; a Member reads networks and rules without their buttons', async () => {
    const member = await createUser(world.app.url, session, 'Member', [world.user.networkId]);
    const memberEmail = expectOk(await call(world.app.url, 'GET', '/api/auth/me', { auth: member.auth })).email as string;
    const nav = (page: Page) => page.$$eval('header nav a', (as) => as.map((a) => a.textContent));
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, { email: memberEmail, password: PASSWORD }, '/networks');
    await card(w.page, 'Default').locator('.network-counts', { hasText: 'hosts' }).waitFor();
    expect(await nav(w.page)).to.deep.equal(['Map', 'Hosts', 'Changes', 'Daemons', 'Networks', 'API keys', 'Service definitions']);
    expect(await w.page.locator('#new-network, .edit-network, .delete-network').count()).to.equal(0);
    await w.page.click(`article.network-card h2 a`);
    await w.page.locator('.alert-rules p.muted', { hasText: 'No alert rule.' }).waitFor();
    expect(await w.page.locator('#new-alert-rule, .edit-network').count()).to.equal(0);
    expectNoProblems(w);
    await w.close();

    // The Owner: Webhooks; the queue dashboard once granted (the API says whom: /api/auth/me operator).
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, world.user, '/networks');
    await card(w.page, 'Default').waitFor();
    expect(await nav(w.page)).to.deep.equal(['Map', 'Hosts', 'Changes', 'Daemons', 'Networks', 'Webhooks', 'API keys', 'Service definitions']);
    await setOperator(new Db(world.app.services.orm.em.fork()), world.user.email, true);
    await w.page.reload();
    await card(w.page, 'Default').waitFor();
    expect(await nav(w.page)).to.deep.equal(['Map', 'Hosts', 'Changes', 'Daemons', 'Networks', 'Webhooks', 'API keys', 'Service definitions', 'Queues']);
    expect(await w.page.getAttribute('#queue-dashboard', 'href')).to.equal('/admin/queues');
    expect((await call(world.app.url, 'GET', '/admin/queues', { auth: session })).status).to.equal(200);
    expectNoProblems(w);
  });

  it('a network\'s page: its settings with the stale explanation, and its alert rules (create, edit, delete)', async () => {
    const netId = world.user.networkId;
    expectOk(await call(world.app.url, 'PATCH', `/api/v1/networks/${netId}`, { auth: session, body: { host_expiry_days: 14 } }));
    const hook = expectOk(await call(world.app.url, 'POST', '/api/v1/webhooks', { auth: session, body: { name: 'ops ntfy', url: 'https://ntfy.sh/ops-alerts', preset: 'ntfy', event_types: ['alert.digest'] } }), 201);
    for (const [width, height] of SIZES) {
      w = await openPage(world.browser, world.app.url, [], { width, height });
      const { page } = w;
      await signIn(page, world.app.url, world.user, `/networks/${netId}`);
      await page.locator('.network-settings .host-expiry').waitFor();
      expect(await page.locator('.network-settings .host-expiry').textContent()).to.equal('14 days offline — hosts offline longer than this are shown as stale');
      await page.locator('.alert-rules p.muted', { hasText: 'No alert rule' }).waitFor();

      // A rule: a host offline for 15 minutes, to the webhook and an address, quiet at night.
      await page.click('#new-alert-rule');
      const dialog = page.locator('dialog[open]');
      await dialogButtonsInView(page, 'the alert rule form');
      const delay = dialog.getByLabel('Delay before reporting (minutes offline)');
      expect(await delay.isVisible()).to.equal(false); // a new host has no delay
      await dialog.getByLabel('Alert when').selectOption('host_offline');
      expect(await delay.isVisible()).to.equal(true);
      await delay.fill('15');
      await dialog.getByLabel('ops ntfy (ntfy)').check();
      await dialog.getByLabel('Send to e-mail addresses').fill('ops@example.com, oncall@example.com');
      await dialog.getByLabel('Quiet hours from').fill('22:00');
      await dialog.getByLabel('Quiet hours until').fill('07:00');
      await dialog.getByLabel('Quiet hours time zone').fill('Europe/Paris');
      await dialogButtonsInView(page, 'the alert rule form, filled');
      if (process.env.SCREENSHOTS && width === 390) await page.screenshot({ path: `${DOCS}web-networks-rule-form-390.png` });
      // A shorter screen: the fields scroll between the title and the buttons, which stay.
      await page.setViewportSize({ width, height: 560 });
      await dialogButtonsInView(page, 'the alert rule form on a short screen');
      expect(await dialog.locator('.form-body').evaluate((b) => b.scrollHeight > b.clientHeight)).to.equal(true);
      await page.setViewportSize({ width, height });
      await dialog.getByRole('button', { name: 'Create rule' }).click();
      const rule = page.locator('ul.rules li.rule[data-kind=host_offline]');
      await rule.waitFor();
      expect(await rule.locator('.rule-details').textContent())
        .to.equal('after 15 min offline · quiet 22:00–07:00 Europe/Paris · to ops ntfy, ops@example.com, oncall@example.com');
      const [stored] = await api('GET', `/api/v1/alert_rules?network_id=${netId}`) as any[];
      expect(stored).to.deep.include({
        kind: 'host_offline', enabled: true, offline_delay_minutes: 15, webhook_ids: [hook.id], email_to: ['ops@example.com', 'oncall@example.com'],
        quiet_hours: { start: '22:00', end: '07:00', timezone: 'Europe/Paris' },
      });
      if (process.env.SCREENSHOTS) {
        await page.evaluate(() => document.fonts.ready);
        expect(await pageWidth(page)).to.be.at.most(width);
        await page.screenshot({ path: `${DOCS}web-networks-network-${width}.png`, fullPage: width === 390 });
      }

      // Edit: disabled, no quiet hours.
      await rule.getByRole('button', { name: 'Edit' }).click();
      await page.locator('dialog[open]').getByLabel('Enabled').uncheck();
      await page.locator('dialog[open]').getByLabel('Quiet hours from').fill('');
      await page.locator('dialog[open]').getByLabel('Quiet hours until').fill('');
      await page.locator('dialog[open]').getByRole('button', { name: 'Save' }).click();
      await page.locator('ul.rules li.rule.disabled .badge', { hasText: 'disabled' }).waitFor();
      expect(await api('GET', `/api/v1/alert_rules/${stored.id}`)).to.deep.include({ enabled: false, quiet_hours: null, offline_delay_minutes: 15 });

      // Delete.
      await page.locator('ul.rules li.rule').getByRole('button', { name: 'Delete' }).click();
      await page.locator('dialog[open]').getByRole('button', { name: 'Delete rule' }).click();
      await page.locator('.alert-rules p.muted', { hasText: 'No alert rule' }).waitFor();
      await waitFor('the rule deleted', async () => (await api('GET', `/api/v1/alert_rules?network_id=${netId}`) as any[]).length === 0);
      expectNoProblems(w);
      await w.close();
      w = undefined;
    }
  });
});
