// /api/docs in a real browser (issue 14.2): Swagger UI draws every operation from this origin alone,
// a body shows its example and no server-owned field, and "Try it out" sends a request with the
// signed-in user's session and shows the answer.
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectNoProblems, launchBrowser, openPage, registerUser, signIn } from '../web/browser.js';

describe('http: the API docs page', function () {
  this.timeout(60_000);
  let app: TestApp;
  let browser: Browser;
  before(async () => {
    app = await startTestApp();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser.close();
    await app.close();
  });

  it('shows each operation with its example and runs it from the page with the session', async function () {
    this.timeout(120_000); // Swagger UI's first draw on a loaded machine
    const user = await registerUser(app.url);
    const w = await openPage(browser, app.url);
    await signIn(w.page, app.url, user);
    await w.page.waitForURL(/\/networks\//);
    await w.page.goto(`${app.url}/api/docs`);
    // Every group is listed; opening one draws its operations.
    await w.page.waitForSelector('#operations-tag-Hosts', { timeout: 60_000 });
    expect(await w.page.locator('.opblock-tag').count()).to.be.above(15);
    await w.page.click('#operations-tag-Hosts');
    // A body: its example, without server-owned fields.
    const create = w.page.locator('#operations-Hosts-createHost');
    await create.locator('.opblock-summary').click();
    const example = await create.locator('.body-param__example, .highlight-code').first().innerText();
    expect(example).to.include('"name": "web-01"');
    expect(example).to.not.include('created_at');
    // Try it out: GET /api/v1/tags as the signed-in user.
    await w.page.click('#operations-tag-Tags');
    const list = w.page.locator('#operations-Tags-listTags');
    await list.locator('.opblock-summary').click();
    await list.locator('button.try-out__btn').click();
    await list.locator('button.execute').click();
    const status = list.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ timeout: 10_000 });
    expect((await status.innerText()).trim(), await list.locator('.live-responses-table').innerText()).to.equal('200');
    expect(await list.locator('.live-responses-table .microlight, .live-responses-table pre').first().innerText()).to.include('"success": true');
    expectNoProblems(w);
    await w.close();
  });
});
