// The version-status job: a status can change without any write (a sunset date passes); each change
// is remembered per daemon, logged and counted (daemon_version_status_changes_total on /metrics).
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Worker } from 'bullmq';
import { SHARED_COUNTERS } from '../../src/core/queues.js';
import { evaluateVersionStatuses, startVersionStatus, versionStatusKey } from '../../workers/versionStatus.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { db, seedDaemon, waitFor, workerServicesFor } from './support.js';

describe('version-status worker', () => {
  let app: TestApp;
  let t: Tenant;
  let services: ReturnType<typeof workerServicesFor>;
  let lines: Record<string, unknown>[];
  const workers: Worker[] = [];

  beforeEach(async () => {
    app = await startTestApp({ metricsToken: 'tok' });
    t = await registerTenant(app.url);
    services = workerServicesFor(app);
    lines = [];
    const sink = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
    services.logger = pino({ level: 'info' }, sink);
    services.versionPolicy = { minimumSupported: '0.12.0', recommended: '0.14.13', sunset: { floor: '0.14.0', date: '2026-12-31' } };
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await services.close();
    await app.close();
  });

  it('re-evaluates on a schedule, and a passing sunset date changes a status without any write', async () => {
    const seed = (version: string | null) => seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: 'http://127.0.0.1:1', version, lastSeen: new Date() });
    const old = await seed('0.13.6');
    const current = await seed('0.14.13');
    const unknown = await seed(null);
    const key = versionStatusKey(app.redisPrefix);

    // First evaluation: statuses are remembered, nothing counts as a change.
    const before = await evaluateVersionStatuses(services, new Date('2026-12-30T12:00:00Z'));
    expect(before).to.deep.equal({ evaluated: 3, changes: [] });
    expect(await app.services.redis.hgetall(key)).to.deep.equal({ [old.id]: 'Deprecated', [current.id]: 'Current', [unknown.id]: 'Unknown' });
    // The last day of support is still Deprecated; the day after, Unsupported.
    expect(await evaluateVersionStatuses(services, new Date('2026-12-31T23:59:00Z'))).to.deep.equal({ evaluated: 3, changes: [] });
    const after = await evaluateVersionStatuses(services, new Date('2027-01-01T00:00:01Z'));
    expect(after.changes).to.deep.equal([{ daemonId: old.id, from: 'Deprecated', to: 'Unsupported' }]);
    expect(await app.services.redis.hget(key, old.id)).to.equal('Unsupported');
    const logged = lines.filter((l) => l.msg === 'daemon version status changed');
    expect(logged).to.have.length(1);
    expect(logged[0]).to.include({ daemon_id: old.id, version: '0.13.6', from: 'Deprecated', to: 'Unsupported', sunset_date: '2026-12-31', level: 40 });
    expect(await evaluateVersionStatuses(services, new Date('2027-01-02T00:00:00Z'))).to.deep.equal({ evaluated: 3, changes: [] });

    // A version written by a daemon, and the policy's own changes, count the same way.
    await db(app).query(`update daemons set version = '0.14.2' where id = ?`, [old.id]);
    await db(app).query(`delete from daemons where id = ?`, [unknown.id]);
    const moved = await evaluateVersionStatuses(services, new Date('2027-01-02T00:00:00Z'));
    expect(moved).to.deep.equal({ evaluated: 2, changes: [{ daemonId: old.id, from: 'Unsupported', to: 'Outdated' }] });
    expect(Object.keys(await app.services.redis.hgetall(key)).sort()).to.deep.equal([old.id, current.id].sort()); // the deleted one is forgotten
    const counted = await services.metrics.counterValues(SHARED_COUNTERS.versionStatusChanges.name);
    expect(counted.sort((a, b) => a.labels.to.localeCompare(b.labels.to))).to.deep.equal([
      { labels: { from: 'Unsupported', to: 'Outdated' }, value: 1 },
      { labels: { from: 'Deprecated', to: 'Unsupported' }, value: 1 },
    ]);
    const metrics = await fetch(`${app.url}/metrics`, { headers: { Authorization: 'Bearer tok' } }).then((r) => r.text());
    expect(metrics).to.include('daemon_version_status_changes_total{from="Deprecated",to="Unsupported"} 1');

    // The worker runs the same evaluation from its job scheduler (here every 100 ms).
    await app.services.redis.del(key);
    await db(app).query(`update daemons set version = '0.13.0' where id = ?`, [old.id]);
    const scheduled = { ...services, settings: { ...services.settings, versionStatusIntervalMs: 100 } };
    workers.push(await startVersionStatus(scheduled));
    await waitFor('scheduled evaluation', async () => (await app.services.redis.hget(key, old.id)) !== null);
    expect(await services.queues.versionStatus.getJobScheduler('evaluate-version-status')).to.include({ every: 100 });
  });
});
