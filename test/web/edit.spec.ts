// Editing in the web application (issue 23.6) in real Chromium: a host created through the form
// is listed, an edit renames it, an edit of a host changed since the form opened shows the conflict
// (reload shows the new state, overwrite saves), and a delete asks first.
import { expect } from 'chai';
import { call, expectOk, type Credential } from '../support/client.js';
import { login } from '../support/world.js';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, openPage, signIn, waitForMap, webWorld, type WatchedPage } from './browser.js';

describe('web application: create, edit and delete (Chromium)', function () {
  this.timeout(60_000);
  let w: WatchedPage;
  let subnet: { id: string };
  let session: Credential;
  const auth = async () => session;
  const api = async (method: string, path: string, body?: unknown) => expectOk(await call(world.app.url, method, path, { auth: await auth(), body }), method === 'POST' ? 201 : 200);
  const world = webWorld({
    ready: async ({ app, user }) => {
      session = await login(app.url, user.email, user.password); // once: waits poll the API, and sign-ins are rate limited
      subnet = await api('POST', '/api/v1/subnets', { network_id: user.networkId, cidr: '10.9.0.0/24', name: 'office' });
    },
  });
  afterEach(async () => { await w?.close(); });
  const mapPath = () => `/networks/${world.user.networkId}/topology`;
  const mapHostNames = async () => w.page.$$eval('#host-list .host-entry', (els) => els.map((e) => e.firstChild!.textContent!.trim()));
  const listedHosts = async () => w.page.$$eval('table.list tbody tr td:first-child a', (els) => els.map((e) => e.textContent));
  /** Opens the map with the host selected: its details panel shows Edit and Delete. */
  async function openOnMap(host: { id: string; name: string }, allow: RegExp[] = []) {
    w = await openPage(world.browser, world.app.url, allow);
    await signIn(w.page, world.app.url, world.user, mapPath());
    await waitForMap(w.page);
    await w.page.click(`#host-list [data-host-id="${host.id}"]`);
    await w.page.waitForSelector('#details #edit-host');
  }

  it('creates a host with an address and a port through the form on a 390 px screen, and the list shows it', async () => {
    w = await openPage(world.browser, world.app.url, [], { width: 390, height: 800 });
    await signIn(w.page, world.app.url, world.user, '/hosts');
    await w.page.click('#add-menu');
    await w.page.keyboard.press('Enter'); // the menu's first item (focused): Host
    const dialog = w.page.locator('dialog[open]');
    await dialog.getByLabel('Name', { exact: true }).fill('printer');
    await dialog.getByLabel('Hostname').fill('printer.lan');
    await dialog.getByRole('button', { name: 'Add address' }).click();
    await dialog.getByLabel('Subnet').selectOption(subnet.id);
    await dialog.getByLabel('Address', { exact: true }).fill('10.9.0.30');
    await dialog.getByRole('button', { name: 'Add port' }).click();
    await dialog.getByLabel('Port', { exact: true }).fill('631');
    const box = await dialog.boundingBox();
    expect(box!.x).to.be.at.least(0);
    expect(box!.x + box!.width).to.be.at.most(390);
    expect(await w.page.evaluate(() => document.querySelector('dialog[open]')!.scrollWidth <= document.querySelector('dialog[open]')!.clientWidth)).to.equal(true);
    await dialog.getByRole('button', { name: 'Save' }).click();
    await waitFor('the new host listed', async () => (await listedHosts()).includes('printer'));
    const [created] = (await api('GET', '/api/v1/hosts?q=printer')) as any[];
    expect(created).to.include({ name: 'printer', hostname: 'printer.lan', network_id: world.user.networkId });
    expect(created.ip_addresses.map((ip: any) => ip.ip_address)).to.deep.equal(['10.9.0.30']);
    expect(created.ports.map((p: any) => [p.number, p.protocol])).to.deep.equal([[631, 'Tcp']]);
    expectNoProblems(w);
  });

  it('edits a host\'s name from the map\'s details panel: the map lists the new name, the fields not edited are kept', async () => {
    const host = await api('POST', '/api/v1/hosts', { network_id: world.user.networkId, name: 'nas', hostname: 'nas.lan', ip_addresses: [{ subnet_id: subnet.id, ip_address: '10.9.0.20' }] });
    await openOnMap(host);
    await w.page.click('#edit-host');
    const dialog = w.page.locator('dialog[open]');
    expect(await dialog.getByLabel('Name', { exact: true }).evaluate((e) => e === document.activeElement)).to.equal(true); // focus in the form
    await dialog.getByLabel('Name', { exact: true }).fill('storage');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await waitFor('the new name on the map', async () => (await mapHostNames()).includes('storage'));
    expect(await mapHostNames()).to.not.include('nas');
    const saved = await api('GET', `/api/v1/hosts/${host.id}`);
    expect(saved).to.include({ name: 'storage', hostname: 'nas.lan' });
    expect(saved.ip_addresses.map((ip: any) => ip.id)).to.deep.equal(host.ip_addresses.map((ip: any) => ip.id));
    expectNoProblems(w);
  });

  it('an edit of a host changed since the form opened shows the conflict; Reload shows the new state, Overwrite saves', async () => {
    const host = await api('POST', '/api/v1/hosts', { network_id: world.user.networkId, name: 'nas', hostname: 'nas.lan' });
    await openOnMap(host, [/status of 409/]);
    await w.page.click('#edit-host');
    const dialog = w.page.locator('dialog[open]');
    await api('PATCH', `/api/v1/hosts/${host.id}`, { name: 'renamed-elsewhere' });
    await dialog.getByLabel('Description').fill('mine');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.getByText('changed since you opened it').waitFor();
    await dialog.getByRole('button', { name: 'Reload' }).click();
    await waitFor('the form reloaded', async () => (await w.page.locator('dialog[open]').getByLabel('Name', { exact: true }).inputValue().catch(() => '')) === 'renamed-elsewhere');
    expect(await w.page.locator('dialog[open]').getByLabel('Description').inputValue()).to.equal('');

    // Changed again behind the reloaded form: Overwrite writes this form's fields over it.
    await api('PATCH', `/api/v1/hosts/${host.id}`, { hostname: 'changed.lan' });
    const reloaded = w.page.locator('dialog[open]');
    await reloaded.getByLabel('Description').fill('overwritten');
    await reloaded.getByRole('button', { name: 'Save' }).click();
    await reloaded.getByText('changed since you opened it').waitFor();
    await reloaded.getByRole('button', { name: 'Overwrite' }).click();
    await waitFor('the overwrite saved', async () => (await api('GET', `/api/v1/hosts/${host.id}`)).description === 'overwritten');
    expect(await w.page.locator('dialog[open]').count()).to.equal(0);
    expect(await api('GET', `/api/v1/hosts/${host.id}`)).to.include({ name: 'renamed-elsewhere', hostname: 'changed.lan' });
    expectNoProblems(w);
  });

  it('the + Add menu on the map adds a tag, a subnet and a dependency (members picked from a list), and edits an existing subnet', async () => {
    const host = await api('POST', '/api/v1/hosts', { network_id: world.user.networkId, name: 'app', services: [{ name: 'web', service_definition: 'Nginx' }, { name: 'db', service_definition: 'PostgreSQL' }] });
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, world.user, mapPath());
    await waitForMap(w.page);
    const add = async (kind: string) => {
      await w.page.click('#add-menu');
      await w.page.click(`#add-menu-items [data-kind=${kind}]`);
      return w.page.locator('dialog[open]');
    };
    let dialog = await add('tag');
    await dialog.getByLabel('Name', { exact: true }).fill('critical');
    await dialog.getByLabel('Colour').selectOption('Red');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });

    dialog = await add('subnet');
    await dialog.getByLabel('CIDR').fill('10.8.0.0/24');
    await dialog.getByLabel('Name', { exact: true }).fill('lab');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });

    dialog = await add('dependency');
    await dialog.getByLabel('Name', { exact: true }).fill('app path');
    // A request path's members in the order they are checked, not the list's (which is by name: db first).
    await dialog.getByLabel('web · app').check();
    await dialog.getByLabel('db · app').check();
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });

    // An existing subnet, picked at the top of the subnet form: its form, and a PATCH of the name only.
    const lab = ((await api('GET', `/api/v1/subnets?network_id=${world.user.networkId}`)) as any[]).find((x) => x.cidr === '10.8.0.0/24');
    dialog = await add('subnet');
    await dialog.getByLabel('Edit an existing subnet, or add one').selectOption(lab.id);
    const edit = w.page.locator('dialog[open]', { hasText: 'Edit subnet lab' });
    await edit.getByLabel('Name', { exact: true }).fill('lab-2');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });

    expect(((await api('GET', '/api/v1/tags')) as any[]).map((t) => [t.name, t.color])).to.deep.equal([['critical', 'Red']]);
    expect(await api('GET', `/api/v1/subnets/${lab.id}`)).to.include({ name: 'lab-2', cidr: '10.8.0.0/24', network_id: world.user.networkId });
    const [dependency] = (await api('GET', `/api/v1/dependencies?network_id=${world.user.networkId}`)) as any[];
    expect(dependency).to.include({ name: 'app path', dependency_type: 'RequestPath' });
    const serviceId = (name: string) => host.services.find((x: any) => x.name === name).id;
    expect(dependency.members).to.deep.equal({ type: 'Services', service_ids: [serviceId('web'), serviceId('db')] });
    expectNoProblems(w);
  });

  it('a delete asks first: Cancel keeps the host, Delete removes it from the map', async () => {
    const host = await api('POST', '/api/v1/hosts', { network_id: world.user.networkId, name: 'old-box' });
    await openOnMap(host);
    await w.page.click('#delete-host');
    const confirm = w.page.locator('dialog[open][role=alertdialog]');
    await confirm.getByText('Delete the host old-box?').waitFor();
    await w.page.keyboard.press('Escape'); // Cancel has the focus; Escape cancels too
    await confirm.waitFor({ state: 'detached' });
    expect((await api('GET', `/api/v1/hosts/${host.id}`)).name).to.equal('old-box');
    await w.page.click('#delete-host');
    await confirm.getByRole('button', { name: 'Delete host' }).click();
    await waitFor('the host gone from the map', async () => !(await mapHostNames()).includes('old-box'));
    expect((await call(world.app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: await auth() })).status).to.equal(404);
    expectNoProblems(w);
  });
});
