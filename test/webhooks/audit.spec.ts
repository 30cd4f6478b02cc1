// Webhook behaviours an audit found no test for (issue 22): a dispatch batch holding two
// organizations' events, the network_ids filter, a retry lost to a Redis flush once it waits as a
// delayed job, and the timestamp a Standard Webhooks receiver accepts.
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk, type Credential } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { db, waitFor, workerServicesFor } from '../workers/support.js';
import { startWebhookDelivery } from '../../workers/webhookDelivery.js';
import { startReceiver, verify, type Receiver } from './receiver.js';
import { deleteKeysMatching } from '../../src/core/redis.js';

describe('webhooks: what the audit slipped past', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let services: ReturnType<typeof workerServicesFor> | undefined;
  let worker: Worker | undefined;
  const receivers: Receiver[] = [];

  const receiver = async (answer?: Parameters<typeof startReceiver>[0]) => {
    const r = await startReceiver(answer);
    receivers.push(r);
    return r;
  };
  const hook = async (auth: Credential, r: Receiver, body: Record<string, unknown>) => {
    const created = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth, body: { name: 'hook', url: r.url, ...body } }), 201);
    r.secrets.push(created.secret);
    return created;
  };
  const tag = async (auth: Credential, name: string) => expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth, body: { name, color: 'Blue' } }), 201);
  const host = async (auth: Credential, networkId: string, name: string) => expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth, body: { name, network_id: networkId } }), 201);
  const deliveries = async (auth: Credential, webhookId: string) => expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${webhookId}/deliveries`, { auth }));
  /** The endpoint's deliveries once there are at least `count`, all delivered (a test then checks how many). */
  const allDelivered = (auth: Credential, webhookId: string, count: number) => waitFor(`${count} deliveries delivered`, async () => {
    const list = await deliveries(auth, webhookId);
    return list.length >= count && list.every((d: any) => d.status === 'delivered') ? list : undefined;
  });
  const runWorker = async (schedule: number[]) => {
    services = workerServicesFor(app, { lockDurationMs: 2000, stalledIntervalMs: 1000 });
    worker = await startWebhookDelivery({ ...services, config: { ...services.config, webhookAllowedNetworks: ['127.0.0.0/8'], webhookRetrySchedule: schedule } }, { sweepMs: 300 });
  };
  /** What each received request was about: the event's type and the entity's name. */
  const about = (r: Receiver) => r.received.map((x) => `${x.json.type} ${x.json.data.data.name}`).sort();

  beforeEach(async () => {
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url);
  });
  afterEach(async () => {
    await worker?.close();
    await services?.close();
    worker = services = undefined;
    for (const r of receivers.splice(0)) await r.close();
    await app.close();
  });

  it('a dispatch batch holding two organizations\' events sends each organization\'s events to its own endpoints only', async () => {
    const other = await registerTenant(app.url, 'other');
    const [mine, theirs] = [await receiver(), await receiver()];
    const myHook = await hook(t.owner, mine, { event_types: ['tag.*'] });
    const theirHook = await hook(other.owner, theirs, { event_types: ['tag.*'] });
    // Written before the worker starts, interleaved: one dispatch reads them all, one job carries all four deliveries.
    await tag(t.owner, 'mine-1');
    await tag(other.owner, 'theirs-1');
    await tag(t.owner, 'mine-2');
    await tag(other.owner, 'theirs-2');
    await runWorker([0]);
    await allDelivered(t.owner, myHook.id, 2);
    await allDelivered(other.owner, theirHook.id, 2);
    expect(about(mine)).to.deep.equal(['tag.created mine-1', 'tag.created mine-2']);
    expect(about(theirs)).to.deep.equal(['tag.created theirs-1', 'tag.created theirs-2']);
    expect(mine.received.every((x) => x.json.data.organization_id === t.orgId)).to.equal(true);
    for (const x of [...mine.received, ...theirs.received]) expect(x.verified).to.equal(true);
  });

  it('an endpoint limited to networks gets only those networks\' events (no organization-wide ones)', async () => {
    const lab = await createNetwork(app.url, t.owner, 'Lab');
    const [limited, everything] = [await receiver(), await receiver()];
    const limitedHook = await hook(t.owner, limited, { event_types: ['*'], network_ids: [lab] });
    const everyHook = await hook(t.owner, everything, { event_types: ['*'] });
    expect(limitedHook.network_ids).to.deep.equal([lab]);
    await runWorker([0]);
    await tag(t.owner, 'org-wide');
    await host(t.owner, t.defaultNetworkId, 'in-default');
    await host(t.owner, lab, 'in-lab');
    // The unlimited endpoint got all three, so every event was dispatched (both endpoints' deliveries in one transaction).
    await allDelivered(t.owner, everyHook.id, 3);
    expect(about(everything)).to.deep.equal(['host.created in-default', 'host.created in-lab', 'tag.created org-wide']);
    const log = await allDelivered(t.owner, limitedHook.id, 1);
    expect(log.map((d: any) => d.type)).to.deep.equal(['host.created']);
    expect(about(limited)).to.deep.equal(['host.created in-lab']);
    expect(limited.received[0]!.json.data.network_id).to.equal(lab);
  });

  it('a retry waiting as a delayed job is sent once due even when a Redis flush lost that job (the sweep re-adds it from PostgreSQL)', async () => {
    const r = await receiver((_x, n) => (n === 1 ? 500 : 200));
    const w = await hook(t.owner, r, { event_types: ['tag.created'] });
    await runWorker([0, 3600]); // the retry an hour after the first failure: it waits in Redis
    await tag(t.owner, 'retried');
    const [pending] = await waitFor('the first attempt failed and its retry recorded', async () => {
      const list = await deliveries(t.owner, w.id);
      return list[0]?.attempts === 1 && list[0].status === 'pending' && list[0].next_attempt_at ? list : undefined;
    });
    const retryJob = `d-${pending.id}-1`;
    const queue = services!.queues.webhookDelivery;
    await waitFor('the retry queued as a delayed job', async () => (await (await queue.getJob(retryJob))?.isDelayed()) ?? false);

    await deleteKeysMatching(app.services.redis, `${app.redisPrefix}*`);
    expect(await queue.getJob(retryJob)).to.equal(undefined);
    // The hour passes: the retry is due, and only PostgreSQL still knows it.
    await db(app).query(`update webhook_deliveries set next_attempt_at = now() - interval '3 seconds' where id = ?`, [pending.id]);

    const [done] = await waitFor('the retry lost with Redis sent', async () => {
      const list = await deliveries(t.owner, w.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(done.attempt_log.map((a: any) => a.status_code)).to.deep.equal([500, 200]);
    expect(r.received.map((x) => x.headers['webhook-id'])).to.deep.equal([pending.id, pending.id]);
  });

  it('webhook-timestamp is in seconds: the reference Standard Webhooks library accepts every delivery', async () => {
    const r = await receiver();
    const w = await hook(t.owner, r, { event_types: ['tag.created'] });
    await runWorker([0]);
    const before = Math.floor(Date.now() / 1000);
    await tag(t.owner, 'stamped');
    await allDelivered(t.owner, w.id, 1);
    const [x] = r.received;
    expect(verify(w.secret, x!.headers, x!.body)).to.equal(true);
    expect(x!.headers['webhook-timestamp']).to.match(/^\d{10}$/);
    expect(Number(x!.headers['webhook-timestamp'])).to.be.at.least(before);
  });
});
