// The Service definitions page (issue 38.6) in real headless Chromium against a real app: create
// (a refused pattern's reason shown beside the pattern), list, edit, delete.
import { expect } from 'chai';
import { call, expectOk, type Credential } from '../support/client.js';
import { login } from '../support/world.js';
import { expectNoProblems, openPage, signIn, webWorld, type WatchedPage } from './browser.js';

describe('web application: the Service definitions page (Chromium)', function () {
  this.timeout(90_000);
  let w: WatchedPage | undefined;
  let session: Credential;
  const world = webWorld({ ready: async ({ app, user }) => { session = await login(app.url, user.email, user.password); } });
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });
  const stored = async () => expectOk(await call(world.app.url, 'GET', '/api/v1/service_definitions', { auth: session })) as any[];

  it('creates a definition (a refused pattern says why, beside the field), edits and deletes it', async () => {
    // The refused write's 400 is logged by the browser as a failed resource: expected here.
    w = await openPage(world.browser, world.app.url, [/status of 400/]);
    const page = w.page;
    page.on('dialog', (d) => void d.accept());
    await signIn(page, world.app.url, world.user, '/service-definitions');
    await page.waitForSelector('h1:text("Service definitions")');
    await page.fill('#sd-name', 'Acme console');
    await page.fill('#sd-category', 'Web');
    await page.fill('#sd-ports', '8080, 8443');
    await page.fill('#sd-path', '/api/about');
    await page.fill('#sd-pattern', '(a+)+$');
    await page.click('form.stack button[type=submit]');
    await page.waitForSelector('#sd-pattern-error:has-text("nested repetition")');
    expect(await stored()).to.deep.equal([]);

    await page.fill('#sd-pattern', '"product":\\s*"acme"');
    await page.click('form.stack button[type=submit]');
    await page.waitForSelector('table.list td:text("Acme console")');
    const [made] = await stored();
    expect(made).to.deep.include({ name: 'Acme console', category: 'Web', ports: [8080, 8443], probe: { type: 'http', path: '/api/about' } });
    expect(made.match).to.deep.equal({ field: 'body', pattern: '"product":\\s*"acme"' });

    await page.click('table.list button:text("Edit")');
    expect(await page.inputValue('#sd-name')).to.equal('Acme console');
    await page.fill('#sd-name', 'Acme console 2');
    await page.click('form.stack button[type=submit]');
    await page.waitForSelector('table.list td:text("Acme console 2")');
    expect((await stored()).map((d) => d.name)).to.deep.equal(['Acme console 2']);

    await page.click('table.list button:text("Delete")');
    await page.waitForSelector('p.muted:has-text("No service definitions yet")');
    expect(await stored()).to.deep.equal([]);
    expectNoProblems(w);
  });
});
