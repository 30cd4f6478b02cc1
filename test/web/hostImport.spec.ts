// Importing hosts from CSV in the web application (issue 28), in real headless Chromium against a
// real app: from the Hosts page to the import screen, a file through the file input, the preview
// (counts, created / changed / refused tables), Confirm, the result, and the hosts listed.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { call, expectOk, type Credential } from '../support/client.js';
import { login } from '../support/world.js';
import { expectNoProblems, openPage, pageWidth, signIn, webWorld, type WatchedPage } from './browser.js';

const GOOD = [
  'name,hostname,address,subnet,ports,services,tags',
  'web-01,web-01.lan,10.0.1.10,10.0.1.0/24,22/tcp;443/tcp,ssh;https,production',
  'web-02,web-02.lan,10.0.1.11,,22/tcp,ssh,',
  'router,gw.lan,10.0.1.1,,161/udp,snmp,',
  'router,,10.0.2.1,10.0.2.0/24,,,',
  'db-01,db-01.example,10.0.1.20,,22/tcp,,',
].join('\n');

describe('web application: importing hosts from CSV (Chromium)', function () {
  this.timeout(90_000);
  let w: WatchedPage | undefined;
  let session: Credential;
  const world = webWorld({ ready: async ({ app, user }) => { session = await login(app.url, user.email, user.password); } });
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  const hostNames = async () => (expectOk(await call(world.app.url, 'GET', `/api/v1/hosts?network_id=${world.user.networkId}&limit=100`, { auth: session })) as any[]).map((x) => x.name).sort();
  const choose = (page: Page, csv: string, name = 'hosts.csv') => page.setInputFiles('#import-file', { name, mimeType: 'text/csv', buffer: Buffer.from(csv) });

  async function openImport(viewport?: { width: number; height: number }) {
    expectOk(await call(world.app.url, 'POST', '/api/v1/tags', { auth: session, body: { name: 'production', color: 'Green' } }), 201);
    expectOk(await call(world.app.url, 'POST', '/api/v1/hosts', { auth: session, body: { name: 'db-01', network_id: world.user.networkId, hostname: 'db-01.lan' } }), 201);
    w = await openPage(world.browser, world.app.url, [], viewport);
    await signIn(w.page, world.app.url, world.user, '/hosts');
    await w.page.click('#import-csv');
    await w.page.waitForURL(/\/hosts\/import\?network=/);
    return w.page;
  }

  it('uploads a CSV, previews it (nothing stored), confirms, and the hosts appear', async () => {
    const page = await openImport();
    await choose(page, GOOD);
    const preview = page.getByRole('region', { name: 'Preview' });
    await preview.waitFor();
    const counts = page.getByRole('list', { name: 'Counts' });
    expect(await counts.innerText()).to.match(/3\s+to create/).and.match(/1\s+to change/).and.match(/2\s+subnets to create/);
    const created = page.locator('table.import-created tbody tr');
    expect(await created.count()).to.equal(3);
    expect(await created.filter({ hasText: 'router' }).innerText()).to.contain('10.0.1.1').and.contain('10.0.2.1').and.contain('161/udp');
    expect(await page.locator('table.import-changed').innerText()).to.contain('db-01.lan → db-01.example').and.contain('+ 10.0.1.20');
    expect(await hostNames(), 'a preview stores nothing').to.deep.equal(['db-01']);

    await page.click('#import-confirm');
    const done = page.getByRole('region', { name: 'Result' });
    await done.waitFor();
    expect(await done.getByRole('status').innerText()).to.contain('3 hosts created, 1 changed, 2 subnets created');
    expect(await hostNames()).to.deep.equal(['db-01', 'router', 'web-01', 'web-02']);
    // The created hosts link to their pages; "Show the hosts" goes back to the list, which shows them.
    expect(await page.locator('table.import-created a', { hasText: 'router' }).getAttribute('href')).to.match(/^\/hosts\/[0-9a-f-]{36}$/);
    await page.click('#import-show-hosts');
    await page.waitForSelector('table.list tbody tr >> text=router');
    expect(await page.locator('table.list tbody').innerText()).to.contain('web-01').and.contain('10.0.1.1, 10.0.2.1');
    expectNoProblems(w!);
  });

  it('shows refused rows with their reasons and offers no Confirm; a phone gets the same without scrolling sideways', async () => {
    const page = await openImport({ width: 390, height: 844 });
    await choose(page, `${GOOD}\nbad,,10.0.1.300,,,,\nthief,,10.0.1.10,,,,\nlost,,,,,,nope\n`);
    await page.getByRole('region', { name: 'Preview' }).waitFor();
    expect(await page.getByRole('alert').innerText()).to.contain('3 rows are refused');
    const refused = await page.locator('table.import-refused').innerText();
    expect(refused).to.contain("'10.0.1.300' is not an IP address").and.contain("given to host 'web-01' on row 2").and.contain("no tag is named 'nope'");
    expect(await page.locator('#import-confirm').isDisabled()).to.equal(true);
    expect(await pageWidth(page)).to.be.at.most(390);
    expect(await hostNames()).to.deep.equal(['db-01']);
    expectNoProblems(w!);
  });
});
