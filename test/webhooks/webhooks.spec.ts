// Webhooks (issue 13.4–13.7) against a real receiver on 127.0.0.1: signatures checked by an
// independent Standard Webhooks verifier, the retry schedule, 410, the delivery log, redelivery,
// the address guard, and no event lost to a killed worker or a flushed Redis.
import { spawn } from 'node:child_process';
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { NODE, ROOT, waitFor, workerServicesFor } from '../workers/support.js';
import { processDeliveryJob, startWebhookDelivery } from '../../workers/webhookDelivery.js';
import { bundlePath } from '../../scripts/build.js';
import { startReceiver, verify, type Receiver } from './receiver.js';
import { deleteKeysMatching } from '../../src/core/redis.js';

describe('webhooks', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let worker: Worker | undefined;
  let closeWorker: (() => Promise<void>) | undefined;
  const receivers: Receiver[] = [];
  const receiver = async (answer?: Parameters<typeof startReceiver>[0]) => {
    const r = await startReceiver(answer);
    receivers.push(r);
    return r;
  };
  const hook = async (body: Record<string, unknown>) => {
    const created = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'hook', ...body } }), 201);
    receivers.find((r) => r.url === created.url)?.secrets.push(created.secret); // its receiver verifies every delivery
    return created;
  };
  const tag = async (name: string) => expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name, color: 'Blue' } }), 201);
  const host = async (name: string) => expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { name, network_id: t.defaultNetworkId } }), 201);
  /** Every delivery of the endpoint, once all are delivered (the server saw a 2xx for each). */
  const allDelivered = (webhookId: string, count: number, ms = 20_000) => waitFor(`${count} deliveries delivered`, async () => {
    const list = expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${webhookId}/deliveries`, { auth: t.owner }));
    return list.length === count && list.every((d: any) => d.status === 'delivered') ? list : undefined;
  }, ms);
  const runWorker = async (schedule = [0, 1, 1], sweepMs = 300) => {
    const ws = workerServicesFor(app, { lockDurationMs: 2000, stalledIntervalMs: 1000 });
    worker = await startWebhookDelivery({ ...ws, config: { ...ws.config, webhookAllowedNetworks: ['127.0.0.0/8'], webhookRetrySchedule: schedule } }, { sweepMs });
    closeWorker = async () => { await worker!.close(); await ws.close(); };
  };

  beforeEach(async () => {
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url);
  });
  afterEach(async () => {
    await closeWorker?.();
    closeWorker = undefined;
    const received = receivers.flatMap((r) => r.received);
    for (const r of receivers.splice(0)) await r.close();
    await app.close();
    // Every delivery of every test, as a Standard Webhooks receiver checks it (signature and timestamp).
    for (const x of received) expect(x.verified, `delivery ${x.headers['webhook-id']}`).to.equal(true);
  });

  it('delivers matching events, signed per Standard Webhooks; the secret is shown once; rotation signs with both secrets', async () => {
    const r = await receiver();
    const created = await hook({ url: r.url, event_types: ['host.*'] });
    expect(created.secret).to.match(/^whsec_[A-Za-z0-9+/=]+$/);
    const read = expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${created.id}`, { auth: t.owner }));
    expect(read).to.not.have.property('secret');
    await runWorker();
    await tag('not-a-host');
    const h = await host('alpha');
    const [first] = await waitFor('a delivery', async () => (r.received.length ? r.received : undefined));
    expect(first!.json).to.include({ type: 'host.created' });
    expect(first!.json.data).to.include({ type: 'host.created', entity_id: h.id });
    expect(first!.json.timestamp).to.match(/Z$/);
    expect(verify(created.secret, first!.headers, first!.body)).to.equal(true);
    expect(verify(created.secret, { ...first!.headers, 'webhook-id': 'other' }, first!.body)).to.equal('No matching signature found');

    const rotated = expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${created.id}/rotate-secret`, { auth: t.owner }));
    expect(rotated.secret).to.not.equal(created.secret);
    await host('beta');
    const second = await waitFor('the second delivery', async () => r.received.find((x) => x.json.data.data.name === 'beta'));
    expect(String(second.headers['webhook-signature']).split(' ')).to.have.length(2);
    expect(verify(rotated.secret, second.headers, second.body)).to.equal(true);
    expect(verify(created.secret, second.headers, second.body)).to.equal(true);
    expect(r.received.every((x) => x.json.type.startsWith('host.'))).to.equal(true);
  });

  it('retries on the schedule with the same webhook-id, logs every attempt, and redelivers on request', async () => {
    const r = await receiver((_x, n) => (n < 3 ? 500 : 200));
    const w = await hook({ url: r.url, event_types: ['tag.created'] });
    await runWorker([0, 1, 2]);
    await tag('retried');
    await waitFor('three attempts', async () => r.received.length >= 3 || undefined, 20_000);
    const ids = new Set(r.received.map((x) => x.headers['webhook-id']));
    expect(ids.size).to.equal(1);
    const gaps = [r.received[1]!.at - r.received[0]!.at, r.received[2]!.at - r.received[1]!.at];
    // Never before its time (an upper bound would measure the machine's load, not the schedule).
    expect(gaps[0]).to.be.at.least(900);
    expect(gaps[1]).to.be.at.least(1900);
    const log = await waitFor('the delivery delivered', async () => {
      const list = expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${w.id}/deliveries`, { auth: t.owner }));
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(log[0].attempt_log.map((a: any) => a.status_code)).to.deep.equal([500, 500, 200]);
    expect(log[0].attempt_log[0].response_excerpt).to.equal('answer 500');
    expect(log[0].id).to.equal([...ids][0]);

    expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${w.id}/deliveries/${log[0].id}/redeliver`, { auth: t.owner }), 202);
    await waitFor('the redelivery', async () => r.received.length >= 4 || undefined);
    expect(r.received[3]!.headers['webhook-id']).to.equal(log[0].id);
  });

  it('a 410 disables the endpoint (webhook.disabled in the feed); failed deliveries are sent again after re-enabling', async () => {
    let gone = true;
    const r = await receiver(() => (gone ? 410 : 200));
    const w = await hook({ url: r.url, event_types: ['tag.*'] });
    await runWorker([0]);
    const since = new Date(Date.now() - 1000).toISOString();
    await tag('first');
    const disabled = await waitFor('the endpoint disabled', async () => {
      const got = expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${w.id}`, { auth: t.owner }));
      return got.enabled ? undefined : got;
    });
    expect(disabled.disabled_reason).to.equal('gone');
    const events = expectOk(await call(app.url, 'GET', '/api/v1/events?types=webhook.*', { auth: t.owner }));
    expect(events.map((e: any) => [e.type, e.entity_id])).to.deep.equal([['webhook.disabled', w.id]]);
    await tag('second'); // not sent: the endpoint is disabled
    await new Promise((res) => setTimeout(res, 800));
    expect(r.received).to.have.length(1);

    gone = false;
    expectOk(await call(app.url, 'PUT', `/api/v1/webhooks/${w.id}`, { auth: t.owner, body: { name: 'hook', url: r.url, event_types: ['tag.*'], enabled: true } }));
    const again = expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${w.id}/redeliver`, { auth: t.owner, body: { since } }), 202);
    expect(again.redelivered).to.equal(1);
    await waitFor('the failed one sent again', async () => r.received.length >= 2 || undefined);
    expect(r.received[1]!.json.data.data.name).to.equal('first');
  });

  it('an endpoint failing without a success for 5 days is disabled', async () => {
    const r = await receiver(() => 500);
    const w = await hook({ url: r.url, event_types: ['tag.created'] });
    // It has been failing for a while: its first failure 6 days ago.
    await app.services.orm.em.fork().execute(`update webhooks set failing_since = now() - interval '6 days' where id = ?`, [w.id]);
    await runWorker([0, 60]);
    await tag('once more');
    const disabled = await waitFor('the endpoint disabled', async () => {
      const got = expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${w.id}`, { auth: t.owner }));
      return got.enabled ? undefined : got;
    });
    expect(disabled.disabled_reason).to.equal('failing');
    const events = expectOk(await call(app.url, 'GET', '/api/v1/events?types=webhook.disabled', { auth: t.owner }));
    expect(events.map((e: any) => e.data.disabled_reason)).to.deep.equal(['failing']);
  });

  it('refuses loopback, private and metadata destinations unless WEBHOOK_ALLOWED_NETWORKS allows them', async () => {
    const strict = await startTestApp();
    try {
      const owner = (await registerTenant(strict.url)).owner;
      for (const url of ['http://127.0.0.1:9/hook', 'http://2130706433/hook', 'http://[::1]/hook', 'http://10.0.0.5/hook', 'http://169.254.169.254/latest', 'http://[::ffff:127.0.0.1]/x', 'http://localhost:9/hook']) {
        expectError(await call(strict.url, 'POST', '/api/v1/webhooks', { auth: owner, body: { name: 'x', url } }), 400, 'outbound_address_refused');
      }
      expectError(await call(strict.url, 'POST', '/api/v1/webhooks', { auth: owner, body: { name: 'x', url: 'ftp://example.com/x' } }), 400, 'validation_failed');
    } finally {
      await strict.close();
    }
    const r = await receiver();
    expect((await hook({ url: r.url })).url).to.equal(r.url); // this app allows 127.0.0.0/8
    const member = await call(app.url, 'GET', '/api/v1/webhooks', { auth: (await registerTenant(app.url, 'other')).owner });
    expect(expectOk(member)).to.deep.equal([]); // another organization's endpoints are not listed
  });

  it('jobs name their organization; a job queued before they did (deliveries by id alone) is still delivered', async () => {
    const r = await receiver();
    const w = await hook({ url: r.url });
    const ping = expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${w.id}/test`, { auth: t.owner }), 202);
    const queued = (await app.services.queues.webhookDelivery.getJobs(['waiting'])).find((j) => j.data.deliveryIds.includes(ping.delivery_id));
    expect(queued!.data).to.deep.equal({ deliveryIds: [ping.delivery_id], organizationId: t.orgId });
    const ws = workerServicesFor(app);
    try {
      expect(await processDeliveryJob(ws, { data: { deliveryIds: [ping.delivery_id] } })).to.deep.equal({ delivered: 1, retries: 0, failed: 0 });
    } finally {
      await ws.close();
    }
    expect(r.received.map((x) => x.json.type)).to.deep.equal(['webhook.ping']);
    expect(expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${w.id}/deliveries`, { auth: t.owner })).map((d: any) => d.status)).to.deep.equal(['delivered']);
  });

  it('a Redis flush loses no delivery: the sweep enqueues again what PostgreSQL says is due', async () => {
    const r = await receiver((_x, n) => (n === 1 ? 500 : 200));
    const w = await hook({ url: r.url, event_types: ['tag.created'] });
    await runWorker([0, 2], 300);
    await tag('a');
    await tag('b');
    await waitFor('a first failed attempt', async () => r.received.some((x) => x.status === 500) || undefined);
    // The retry waits as a delayed job in Redis: flushed with everything else of this app.
    expect(await deleteKeysMatching(app.services.redis, `${app.redisPrefix}*`)).to.be.greaterThan(0);
    const log = await allDelivered(w.id, 2);
    const retried = log.find((d: any) => d.attempts === 2);
    expect(retried.attempt_log.map((a: any) => a.status_code)).to.deep.equal([500, 200]);
    const answered = r.received.filter((x) => x.status === 200).map((x) => x.json.data.data.name).sort();
    expect(answered).to.deep.equal(['a', 'b']);
  });

  it('a worker killed with SIGKILL mid-delivery loses nothing: another worker delivers every event', async function () {
    let hold = true;
    const r = await receiver(async () => {
      while (hold) await new Promise((res) => setTimeout(res, 50));
      return 200;
    });
    const w = await hook({ url: r.url, event_types: ['tag.created'] });
    const env = {
      ...process.env, DATABASE_URL: app.databaseUrl, REDIS_PREFIX: app.redisPrefix, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8', WEBHOOK_RETRY_SCHEDULE: '0,1,1', WEBHOOK_TIMEOUT_MS: '2000',
      WORKER_LOCK_DURATION_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000', WEBHOOK_SWEEP_MS: '500', LOG_LEVEL: 'warn',
    };
    const first = spawn(NODE, [bundlePath('worker')], { cwd: ROOT, env, stdio: 'ignore' });
    const firstExit = new Promise((res) => first.on('exit', res));
    for (const name of ['k1', 'k2', 'k3']) await tag(name);
    await waitFor('a delivery in flight', async () => r.received.length >= 1 || undefined, 30_000);
    first.kill('SIGKILL');
    await firstExit;
    const beforeRestart = r.received.length;
    hold = false;
    const second = spawn(NODE, [bundlePath('worker')], { cwd: ROOT, env, stdio: 'ignore' });
    const secondExit = new Promise((res) => second.on('exit', res));
    try {
      // Delivered means the server saw the 2xx: each was sent again by the second worker.
      const log = await allDelivered(w.id, 3, 40_000);
      expect(log.map((d: any) => d.attempt_log.at(-1).status_code)).to.deep.equal([200, 200, 200]);
      const resent = r.received.slice(beforeRestart).map((x) => x.json.data.data.name).sort();
      expect(resent).to.include.members(['k1']);
    } finally {
      second.kill('SIGTERM');
      await secondExit;
    }
  });
});
