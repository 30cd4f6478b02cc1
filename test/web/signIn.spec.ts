// The sign-in page's errors, as a person reads them (issue 28): the message without the API's code.
import { expect } from 'chai';
import { expectNoProblems, openPage, webWorld } from './browser.js';

describe('web: sign-in errors', () => {
  const world = webWorld({ perFile: true });

  it('a wrong password says so in words, with no error code under it', async () => {
    const w = await openPage(world.browser, world.app.url, [/status of 401/]);
    await w.page.goto(`${world.app.url}/signin`);
    await w.page.fill('#email', world.user.email);
    await w.page.fill('#password', 'not-the-password');
    await w.page.click('button[type=submit]');
    await w.page.waitForSelector('.notice.error');
    const notice = await w.page.$eval('.notice.error', (e) => ({ text: e.textContent!.trim(), codes: e.querySelectorAll('code').length }));
    expect(notice.codes).to.equal(0);
    expect(notice.text).to.not.match(/auth_|_credentials/);
    expect(notice.text.length).to.be.above(10);
    expectNoProblems(w);
    await w.close();
  });
});
