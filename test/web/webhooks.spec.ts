// The Webhooks page (issue 40.4) in real headless Chromium against a real app, its webhook-delivery
// worker and receivers on 127.0.0.1 (test/webhooks/receiver.ts checks every request's signature with
// the secret the page showed once): create a webhook (the payload presets and the URL each takes),
// send a test delivery and see it in the delivery log with its attempt; an endpoint that answers 410
// is disabled and re-enabled from the page; edit. Dialogs keep Save and Cancel in sight at 390×844
// and 1440×900. SCREENSHOTS=1 writes docs/web-webhooks-{1440,390}.png (a delivery log open) and
// docs/web-webhooks-form-390.png (the form on a phone).
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import type { Page } from 'playwright-core';
import { call, expectOk, type Credential } from '../support/client.js';
import { login } from '../support/world.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { startWebhookDelivery } from '../../workers/webhookDelivery.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { dialogButtonsInView, expectNoProblems, openPage, pageWidth, signIn, webWorld, type WatchedPage } from './browser.js';

const DOCS = 'docs/';
const LOOPBACK = ['127.0.0.0/8'];

describe('web application: the Webhooks page (Chromium)', function () {
  this.timeout(90_000);
  let w: WatchedPage | undefined;
  let session: Credential;
  let worker: Worker | undefined;
  let closeWorker: (() => Promise<void>) | undefined;
  const receivers: Receiver[] = [];
  // (Before webWorld's own afterEach, which stops the app: the worker and the page go first.)
  afterEach(async () => {
    await w?.close();
    w = undefined;
    await closeWorker?.();
    closeWorker = undefined;
    const received = receivers.flatMap((r) => r.received);
    for (const r of receivers.splice(0)) await r.close();
    // Every request a receiver got, checked as a Standard Webhooks receiver checks it.
    for (const x of received) expect(x.verified, `delivery ${x.headers['webhook-id']}`).to.equal(true);
  });
  const world = webWorld({
    config: { webhookAllowedNetworks: LOOPBACK },
    ready: async ({ app, user }) => {
      session = await login(app.url, user.email, user.password);
      const ws = workerServicesFor(app);
      worker = await startWebhookDelivery({ ...ws, config: { ...ws.config, webhookAllowedNetworks: LOOPBACK, webhookRetrySchedule: [0, 1] } }, { sweepMs: 300 });
      closeWorker = async () => { await worker!.close(); await ws.close(); };
    },
  });
  const receiver = async (answer?: Parameters<typeof startReceiver>[0]) => {
    const r = await startReceiver(answer);
    receivers.push(r);
    return r;
  };
  const api = async (method: string, path: string, body?: unknown) => expectOk(await call(world.app.url, method, path, { auth: session, body }));
  const card = (page: Page, name: string) => page.locator('article.webhook-card', { has: page.locator('h2', { hasText: new RegExp(`^${name}$`) }) });

  it('creates a webhook (secret shown once), sends a test delivery to a receiver and shows it in the delivery log; edits it', async () => {
    const r = await receiver();
    w = await openPage(world.browser, world.app.url, [], { width: 1440, height: 900 });
    const { page } = w;
    await signIn(page, world.app.url, world.user, '/webhooks');
    await page.locator('.webhook-list p.muted', { hasText: 'No webhook yet' }).waitFor();

    await page.click('#new-webhook');
    const dialog = page.locator('dialog[open]');
    await dialogButtonsInView(page, 'the webhook form');
    // The presets, each with the URL it takes.
    expect(await dialog.locator('select[name=preset] option').allTextContents())
      .to.deep.equal(['Generic (signed JSON)', 'ntfy', 'Gotify', 'Slack', 'Discord', 'Microsoft Teams']);
    const hint = dialog.locator('[data-hint-for=preset]');
    expect(await hint.textContent()).to.contain('Standard Webhooks JSON');
    await dialog.getByLabel('Payload').selectOption('ntfy');
    expect(await hint.textContent()).to.contain('https://ntfy.sh/my-topic');
    await dialog.getByLabel('Payload').selectOption('generic');
    await dialog.getByLabel('Name', { exact: true }).fill('Lab receiver');
    await dialog.getByLabel('URL').fill(r.url);
    expect(await dialog.getByLabel('Events').inputValue()).to.equal('*');
    await dialog.getByLabel('Events').fill('host.*, alert.digest');
    await page.setViewportSize({ width: 390, height: 844 });
    await dialogButtonsInView(page, 'the webhook form on a phone');
    if (process.env.SCREENSHOTS) await page.screenshot({ path: `${DOCS}web-webhooks-form-390.png` });
    await page.setViewportSize({ width: 1440, height: 900 });
    await dialog.getByRole('button', { name: 'Create webhook' }).click();

    // The secret, once; the receiver checks every delivery's signature with it.
    const secret = (await page.locator('.webhook-secret code.secret').textContent())!;
    expect(secret).to.match(/^whsec_/);
    r.secrets.push(secret);
    const c = card(page, 'Lab receiver');
    await c.waitFor();
    const [hook] = await api('GET', '/api/v1/webhooks') as any[];
    expect(hook).to.deep.include({ name: 'Lab receiver', url: r.url, preset: 'generic', event_types: ['host.*', 'alert.digest'], network_ids: null, enabled: true });
    expect(await c.locator('dl').textContent()).to.equal('Eventshost.*, alert.digestNetworksAll networks');

    // A test: delivered to the receiver, and in the delivery log with its attempt.
    await c.getByRole('button', { name: 'Send a test' }).click();
    await c.locator('.card-status', { hasText: 'Test: delivered (HTTP 200).' }).waitFor();
    expect(r.received.map((x) => x.json.type)).to.deep.equal(['webhook.ping']);
    const delivery = c.locator('ul.deliveries > li.delivery');
    await delivery.first().waitFor();
    expect(await delivery.count()).to.equal(1);
    expect(await delivery.getAttribute('data-status')).to.equal('delivered');
    expect(await delivery.locator('.delivery-type').textContent()).to.equal('webhook.ping');
    expect(await delivery.locator('.delivery-outcome').textContent()).to.match(/^HTTP 200 · \d+ ms$/);
    expect(await delivery.getAttribute('data-delivery-id')).to.equal(r.received[0]!.headers['webhook-id']);
    await delivery.locator('details.attempts summary').click();
    expect(await delivery.locator('details.attempts pre.excerpt').textContent()).to.equal('answer 200');

    // Send it again: a second attempt of the same delivery (same webhook-id).
    await delivery.getByRole('button', { name: 'Send again' }).click();
    await c.locator('.card-status', { hasText: 'Sent again: delivered (HTTP 200).' }).waitFor();
    expect(r.received.map((x) => x.headers['webhook-id'])).to.deep.equal([r.received[0]!.headers['webhook-id'], r.received[0]!.headers['webhook-id']]);

    // Edit: another preset and one network.
    await c.getByRole('button', { name: 'Edit' }).click();
    await page.locator('dialog[open]').getByLabel('Payload').selectOption('slack');
    await page.locator('dialog[open]').getByLabel('Default').check();
    await page.locator('dialog[open]').getByRole('button', { name: 'Save' }).click();
    await c.locator('.badge.preset', { hasText: 'Slack' }).waitFor();
    expect(await api('GET', `/api/v1/webhooks/${hook.id}`)).to.deep.include({ preset: 'slack', network_ids: [world.user.networkId] });
    // The log stays open across the redraw.
    await c.locator('ul.deliveries > li.delivery').first().waitFor();

    if (process.env.SCREENSHOTS) {
      await c.locator('ul.deliveries > li.delivery details.attempts summary').first().click();
      for (const [width, height] of [[1440, 900], [390, 844]] as const) {
        await page.setViewportSize({ width, height });
        await page.evaluate(() => document.fonts.ready);
        expect(await pageWidth(page)).to.be.at.most(width);
        await page.screenshot({ path: `${DOCS}web-webhooks-${width}.png`, fullPage: width === 390 });
      }
    }
    expectNoProblems(w);
  });

  it('an endpoint that answers 410 is disabled, says why, and is re-enabled from the page', async () => {
    const r = await receiver(() => 410);
    const hook = expectOk(await call(world.app.url, 'POST', '/api/v1/webhooks', { auth: session, body: { name: 'Old endpoint', url: r.url, preset: 'generic' } }), 201);
    r.secrets.push(hook.secret);
    w = await openPage(world.browser, world.app.url, [], { width: 390, height: 844 });
    const { page } = w;
    await signIn(page, world.app.url, world.user, '/webhooks');
    const c = card(page, 'Old endpoint');
    await c.getByRole('button', { name: 'Send a test' }).click();
    await c.locator('.card-status', { hasText: 'Test: failed (HTTP 410); see the delivery log.' }).waitFor();
    // Drawn again from the API: disabled, why, and the test button off until it is re-enabled.
    await c.locator('.badge.state', { hasText: 'disabled' }).waitFor();
    expect(await c.locator('.disabled-reason').textContent()).to.contain('Disabled: the endpoint answered 410 Gone.');
    expect(await c.getByRole('button', { name: 'Send a test' }).isDisabled()).to.equal(true);
    expect(await c.locator('ul.deliveries > li.delivery').getAttribute('data-status')).to.equal('failed');
    expect(await api('GET', `/api/v1/webhooks/${hook.id}`)).to.include({ enabled: false, disabled_reason: 'gone' });

    await c.getByRole('button', { name: 'Re-enable' }).click();
    await c.locator('.badge.state', { hasText: 'enabled' }).waitFor();
    expect(await c.locator('.disabled-reason').count()).to.equal(0);
    expect(await api('GET', `/api/v1/webhooks/${hook.id}`)).to.include({ enabled: true, disabled_reason: null, failing_since: null });
    await waitFor('one request received', async () => r.received.length === 1);
    expectNoProblems(w);
  });
});
