// /metrics (Prometheus text, bearer token from configuration). The queue dashboard: test/http/queueDashboard.spec.ts.
import { expect } from 'chai';
import { SharedMetricsStore, SHARED_COUNTERS } from '../../src/core/queues.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';

const TOKEN = 'metrics-secret-token-123';

/** Value of one sample line `name{labels} value` whose labels include all of `labels`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('metrics endpoint', () => {
  let app: TestApp;
  let t: Tenant;

  beforeEach(async () => {
    app = await startTestApp({ metricsToken: TOKEN });
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  const scrape = () => call(app.url, 'GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });

  it('requires the bearer token from configuration (401 enveloped otherwise)', async () => {
    const none = await call(app.url, 'GET', '/metrics');
    expectError(none, 401, 'auth_not_authenticated');
    expect(none.headers.get('www-authenticate')).to.equal('Bearer');
    expectError(await call(app.url, 'GET', '/metrics', { headers: { Authorization: 'Bearer wrong' } }), 401, 'auth_not_authenticated');
    expectError(await call(app.url, 'GET', '/metrics', { headers: { Authorization: `Basic ${TOKEN}` } }), 401, 'auth_not_authenticated');
    // A user session is no substitute for the token.
    expectError(await call(app.url, 'GET', '/metrics', { auth: t.owner }), 401, 'auth_not_authenticated');
    expectError(await call(app.url, 'POST', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } }), 405, 'method_not_allowed');
    const ok = await scrape();
    expect(ok.status).to.equal(200);
    expect(ok.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  });

  it('counts requests by method, route template and status, with durations', async () => {
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'x', color: 'Blue' } }), 201);
    for (let i = 0; i < 3; i += 1) expectOk(await call(app.url, 'GET', `/api/v1/tags/${tag.id}`, { auth: t.owner }));
    await call(app.url, 'GET', '/api/v1/tags/00000000-0000-4000-8000-000000000000', { auth: t.owner }); // 404
    await call(app.url, 'GET', '/api/no/such/route'); // unmatched
    const text = (await scrape()).body as string;
    expect(text).to.include('# TYPE http_requests_total counter');
    expect(text).to.include('# TYPE http_request_duration_seconds histogram');
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/api/v1/tags/:id', status: '200' })).to.equal(3);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/api/v1/tags/:id', status: '404' })).to.equal(1);
    expect(sample(text, 'http_requests_total', { method: 'POST', route: '/api/v1/tags', status: '201' })).to.equal(1);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).to.equal(1);
    expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/tags/:id', status: '200' })).to.equal(3);
    expect(sample(text, 'http_request_duration_seconds_bucket', { method: 'GET', route: '/api/v1/tags/:id', status: '200', le: '+Inf' })).to.equal(3);
    // Raw paths never become labels.
    expect(text).not.to.include(tag.id);
  });

  it('reports per-queue job counts, job durations and version-status changes', async () => {
    const queues = app.services.queues;
    await queues.discoverySync.add('sync', { ctx: { organizationId: t.orgId, networkId: t.defaultNetworkId, daemonId: t.orgId }, subnets: [], hosts: [] });
    await queues.versionStatus.add('evaluate', {}, { delay: 60_000 });
    // What the worker processes record (workers/context.ts `timed`, workers/versionStatus.ts).
    const store = new SharedMetricsStore(app.services.redis, app.services.config.redisPrefix);
    await store.recordJob('discovery-sync', 'completed', 0.02);
    await store.recordJob('discovery-sync', 'completed', 0.3);
    await store.recordJob('discovery-sync', 'failed', 400);
    await store.incrementCounter(SHARED_COUNTERS.versionStatusChanges.name, { from: 'Deprecated', to: 'Unsupported' });
    await store.incrementCounter(SHARED_COUNTERS.versionStatusChanges.name, { from: 'Deprecated', to: 'Unsupported' });

    const text = (await scrape()).body as string;
    for (const queue of ['maintenance', 'server-poll', 'discovery-sync', 'version-status', 'topology-layout']) {
      for (const state of ['waiting', 'active', 'failed', 'completed']) {
        expect(sample(text, 'bullmq_queue_jobs', { queue, state }), `${queue} ${state}`).to.be.a('number');
      }
    }
    expect(sample(text, 'bullmq_queue_jobs', { queue: 'discovery-sync', state: 'waiting' })).to.equal(1);
    expect(sample(text, 'bullmq_queue_jobs', { queue: 'version-status', state: 'delayed' })).to.equal(1);
    expect(text).to.include('# TYPE bullmq_job_duration_seconds histogram');
    const h = { queue: 'discovery-sync', status: 'completed' };
    expect(sample(text, 'bullmq_job_duration_seconds_count', h)).to.equal(2);
    expect(sample(text, 'bullmq_job_duration_seconds_sum', h)).to.be.closeTo(0.32, 1e-9);
    expect(sample(text, 'bullmq_job_duration_seconds_bucket', { ...h, le: '0.025' })).to.equal(1);
    expect(sample(text, 'bullmq_job_duration_seconds_bucket', { ...h, le: '0.5' })).to.equal(2);
    expect(sample(text, 'bullmq_job_duration_seconds_bucket', { ...h, le: '+Inf' })).to.equal(2);
    expect(sample(text, 'bullmq_job_duration_seconds_bucket', { queue: 'discovery-sync', status: 'failed', le: '300' })).to.equal(0);
    expect(sample(text, 'bullmq_job_duration_seconds_bucket', { queue: 'discovery-sync', status: 'failed', le: '+Inf' })).to.equal(1);
    expect(text).to.include('# TYPE daemon_version_status_changes_total counter');
    expect(sample(text, 'daemon_version_status_changes_total', { from: 'Deprecated', to: 'Unsupported' })).to.equal(2);
  });

  it('answers 404 when no token is configured', async () => {
    const bare = await startTestApp({ metricsToken: undefined });
    try {
      expectError(await call(bare.url, 'GET', '/metrics'), 404, 'route_not_found');
      expectError(await call(bare.url, 'GET', '/metrics', { headers: { Authorization: 'Bearer anything' } }), 404, 'route_not_found');
    } finally {
      await bare.close();
    }
  });
});
