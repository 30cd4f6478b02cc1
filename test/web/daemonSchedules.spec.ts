// The Daemons page's schedules (issue 39.1) in real headless Chromium against a real app: an Admin
// adds one (every N minutes, or a cron expression in a time zone), sees how it runs and when next, disables and enables it, deletes it; a
// schedule that disabled itself says why; a Viewer sees the schedules with no button or form.
// SCREENSHOTS=1 writes docs/web-daemons-schedules.png (1440×900) and docs/web-daemons-schedules-phone.png (390×844).
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { call, expectOk, type Credential } from '../support/client.js';
import { login } from '../support/world.js';
import { postSubnet } from '../discovery/reports.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { expectNoProblems, openPage, pageWidth, signIn, webWorld, type WatchedPage } from './browser.js';

const STATUS = { name: 'lab-agent', mode: 'daemon_poll', version: '0.14.13' };
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));

describe('web application: the Daemons page\'s schedules (Chromium)', function () {
  this.timeout(90_000);
  let w: WatchedPage | undefined;
  let session: Credential;
  let d: DaemonClient;
  const world = webWorld({ ready: async ({ app, user }) => { session = await login(app.url, user.email, user.password); } });
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });
  const card = (page: Page) => page.locator(`article.daemon-card[data-daemon-id="${d.id}"]`);
  const schedules = () => `/api/v1/daemons/${d.id}/schedules`;

  /** A registered agent with its LAN approved and its first scan done. */
  beforeEach(async () => {
    const net = world.user.networkId;
    d = daemonClient(world.app.url, (await createDaemonKey(world.app.url, session, net)).key);
    await registerDaemon(d, net, { name: 'lab-agent', version: STATUS.version });
    const lan = await postSubnet(d, net, '198.18.1.0/24', { name: 'lab lan' });
    expectOk(await d.post(`/api/daemons/${d.id}/update-capabilities`, { has_docker_socket: false, interfaced_subnet_ids: [lan.id] }));
    expectOk(await call(world.app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: session, body: { subnet_id: lan.id } }));
    for (;;) {
      const [work] = expectOk(await d.post(`/api/daemons/${d.id}/request-work`, STATUS)) as [any, boolean];
      if (!work) break;
      expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    }
  });

  it('an Admin adds a schedule, disables, enables and deletes it; one that disabled itself says why', async () => {
    w = await openPage(world.browser, world.app.url, [/status of 400/]); // the wrong cron expression's answer
    await signIn(w.page, world.app.url, world.user, '/daemons');
    const c = card(w.page);
    await c.locator('.daemon-schedules').getByText('None: it scans when someone presses Scan now.').waitFor();
    await c.locator('.schedule-every').fill('15');
    await c.getByRole('button', { name: 'Add schedule' }).click();
    const row = c.locator('li.schedule');
    await row.getByText('every 15 minutes').waitFor();
    const [made] = expectOk(await call(world.app.url, 'GET', schedules(), { auth: session })) as any[];
    expect(made).to.include({ every_minutes: 15, enabled: true });
    expect(await row.locator('.schedule-state').textContent()).to.equal(' · enabled');
    expect(await row.locator('.schedule-runs').textContent()).to.match(/^next .+ · last never$/);

    await row.getByRole('button', { name: 'Disable the schedule every 15 minutes' }).click();
    await row.locator('.schedule-state', { hasText: 'disabled' }).waitFor();
    expect((expectOk(await call(world.app.url, 'GET', `${schedules()}/${made.id}`, { auth: session })) as any).enabled).to.equal(false);
    expect(await row.locator('.schedule-runs').textContent()).to.equal('not running · last never');
    await row.getByRole('button', { name: 'Enable the schedule every 15 minutes' }).click();
    await row.locator('.schedule-state', { hasText: 'enabled' }).waitFor();

    // A cron expression in a time zone; a wrong one is refused with the API's reason.
    await c.locator('.schedule-kind').selectOption('cron');
    expect(await c.locator('.schedule-every').isVisible()).to.equal(false);
    await c.locator('.schedule-cron').fill('daily at 3');
    await c.locator('.schedule-zone').fill('Europe/Paris');
    await c.getByRole('button', { name: 'Add schedule' }).click();
    await c.getByText(/cron expression has 5 fields/).waitFor();
    await c.locator('.schedule-cron').fill('0 3 * * *');
    await c.getByRole('button', { name: 'Add schedule' }).click();
    await c.locator('li.schedule').getByText('cron 0 3 * * * (Europe/Paris)').waitFor();
    const second = (expectOk(await call(world.app.url, 'GET', schedules(), { auth: session })) as any[]).find((s) => s.cron);
    expect(second).to.include({ cron: '0 3 * * *', timezone: 'Europe/Paris', every_minutes: null });
    // As the worker leaves one that failed max_failures times in a row.
    await sql(world.app, `update discovery_schedules set enabled = false, consecutive_failures = 3, last_outcome = 'failed', last_run_at = now(), next_run_at = null,
      last_error = 'nothing to scan: no subnet is approved for the daemon', disabled_reason = 'Disabled after 3 consecutive failures; the last: nothing to scan: no subnet is approved for the daemon'
      where id = ?`, [second.id]);
    await w.page.reload();
    const failed = c.locator(`li.schedule[data-schedule-id="${second.id}"]`);
    await failed.locator('.schedule-disabled').getByText('Disabled after 3 consecutive failures; the last: nothing to scan: no subnet is approved for the daemon').waitFor();
    expect(await failed.locator('strong').first().textContent()).to.equal('cron 0 3 * * * (Europe/Paris)');
    expect(await failed.locator('.schedule-runs').textContent()).to.match(/^not running · last .+: failed$/);
    if (process.env.SCREENSHOTS) {
      for (const [width, height, file] of [[1440, 900, 'web-daemons-schedules.png'], [390, 844, 'web-daemons-schedules-phone.png']] as const) {
        await w.page.setViewportSize({ width, height });
        expect(await pageWidth(w.page)).to.be.at.most(width);
        await c.locator('.daemon-schedules').scrollIntoViewIfNeeded();
        await w.page.screenshot({ path: `${DOCS}${file}` });
      }
    }

    await c.locator(`li.schedule[data-schedule-id="${made.id}"]`).getByRole('button', { name: 'Delete the schedule every 15 minutes' }).click();
    await c.locator(`li.schedule[data-schedule-id="${made.id}"]`).waitFor({ state: 'detached' });
    expect((expectOk(await call(world.app.url, 'GET', schedules(), { auth: session })) as any[]).map((s) => s.id)).to.deep.equal([second.id]);
    expectNoProblems(w);
  });

  it('a Viewer sees the schedules, with no button or form to change them', async () => {
    expectOk(await call(world.app.url, 'POST', schedules(), { auth: session, body: { every_minutes: 30 } }), 201);
    const viewer = { email: `viewer-${d.id.slice(0, 8)}@example.test`, password: world.user.password };
    expectOk(await call(world.app.url, 'POST', '/api/v1/users', { auth: session, body: { ...viewer, permissions: 'Viewer', network_ids: [world.user.networkId] } }), 201);
    w = await openPage(world.browser, world.app.url);
    await signIn(w.page, world.app.url, viewer, '/daemons');
    const c = card(w.page);
    await c.locator('li.schedule').getByText('every 30 minutes').waitFor();
    expect(await c.locator('.daemon-schedules button, .daemon-schedules form, .daemon-schedules input').count()).to.equal(0);
    expect(await w.page.locator('#outlet button').count()).to.equal(0);
    expectNoProblems(w);
  });
});
