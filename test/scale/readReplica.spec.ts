// A read replica (issue 26.4): a throwaway primary and its streaming hot standby
// (scripts/pgStandby.ts, loopback ports of their own), the API started with DATABASE_URL on the
// primary and DATABASE_REPLICA_URL on the standby. What is proven, through HTTP:
//  - history and `at` reads are served by the standby: with its replay paused and a row changed on
//    the primary behind it, they answer the old state while a live read answers the new one;
//  - a client reads its own writes: with replay paused its reads after a write come from the
//    primary, with replay resumed mid-read they wait for the standby, and 20 create-then-read
//    rounds see every write; with replay paused a POST, a PUT, a PATCH and a DELETE are each read
//    back by the writer (from the primary) while another user of the organization, who did not
//    write, reads the stale standby;
//  - a standby lagging past the bound, or stopped, gets no reads: they answer 200 from the primary;
//  - /metrics shows the replica's lag (seconds and bytes) and whether it is used.
// Each test makes its own organization and leaves the standby replaying and running.
import { expect } from 'chai';
import pg from 'pg';
import { migrate } from '../../src/core/db.js';
import { createOrm } from '../../src/database.js';
import { startStandbyPair, type StandbyPair } from '../../scripts/pgStandby.js';
import { FIXTURE_BUILDING, startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant } from '../support/world.js';
import { waitFor } from '../workers/support.js';

const METRICS_TOKEN = 'replica-metrics-token';
const DATABASE = 'netinventory';

/** One sample of a metric in Prometheus text (the first line `name{labels} value` matching). */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('scale: a read replica (streaming standby of the primary)', function () {
  this.timeout(60_000);
  let pair: StandbyPair;
  let app: TestApp;
  let primary: pg.Pool;

  const metrics = async (on: TestApp = app) => (await fetch(`${on.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  /** Requests whose reads went to `target` (for `reason`, or for any). */
  const readsTo = async (target: 'replica' | 'primary', reason?: string, on: TestApp = app) => (await metrics(on)).split('\n')
    .filter((l) => l.startsWith(`netinv_db_replica_reads_total{target="${target}",reason="${reason === undefined ? '' : `${reason}"`}`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const get = async (auth: Credential, path: string, on: TestApp = app) => expectOk(await call(on.url, 'GET', path, { auth }));
  const createHost = async (auth: Credential, networkId: string, name: string) =>
    expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth, body: { network_id: networkId, name } }), 201) as { id: string; updated_at: string };

  before(async function () {
    this.timeout(180_000);
    pair = await startStandbyPair();
    const orm = await createOrm(pair.primaryUrl(DATABASE), 2);
    await migrate(orm);
    await orm.close(true);
    await pair.caughtUp(); // the schema (and the database itself) on the standby too
    primary = new pg.Pool({ connectionString: pair.primaryUrl(DATABASE), max: 2 });
    app = await startTestApp({
      ...FIXTURE_BUILDING, metricsToken: METRICS_TOKEN,
      databaseUrl: pair.primaryUrl(DATABASE), databaseReplicaUrl: pair.standbyUrl(DATABASE),
      replicaMaxLagSeconds: 60, // the paused standby below stays in use
    });
  });

  after(async function () {
    this.timeout(120_000);
    await app?.close();
    await primary?.end();
    pair?.stop();
  });

  it('serves history and `at` reads from the standby, live reads from the primary', async () => {
    const t = await registerTenant(app.url, 'replica-reads');
    const host = await createHost(t.owner, t.defaultNetworkId, 'before');
    await pair.caughtUp();
    const replicaReads = await readsTo('replica');
    await pair.pauseReplay();
    try {
      // Changed on the primary behind the paused standby (raw SQL: no API write, no read-your-writes mark).
      await primary.query(`update hosts set name = 'changed on the primary' where id = $1`, [host.id]);
      const at = new Date().toISOString();
      expect((await get(t.owner, `/api/v1/hosts/${host.id}`)).name).to.equal('changed on the primary');
      const history = await get(t.owner, `/api/v1/hosts/${host.id}/history`);
      expect(history.map((s: { name: string }) => s.name)).to.deep.equal(['before']);
      expect((await get(t.owner, `/api/v1/hosts/${host.id}?at=${encodeURIComponent(at)}`)).name).to.equal('before');
      const list = await get(t.owner, `/api/v1/hosts?at=${encodeURIComponent(at)}`);
      expect(list.map((h: { name: string }) => h.name)).to.deep.equal(['before']);
      expect(await readsTo('replica')).to.equal(replicaReads + 3);
      // The lag, as the probe (every second) sees it: WAL received or not yet, but not replayed.
      const text = await waitFor('a replica lag in bytes on /metrics', async () => {
        const m = await metrics();
        return (sample(m, 'netinv_db_replica_lag_bytes') ?? 0) > 0 && m;
      });
      expect(sample(text, 'netinv_db_replica_lag_seconds')).to.be.a('number').and.at.least(0);
      expect(sample(text, 'netinv_db_replica_up')).to.equal(1);
    } finally {
      await pair.resumeReplay();
    }
    await pair.caughtUp();
    expect((await get(t.owner, `/api/v1/hosts/${host.id}/history`)).map((s: { name: string }) => s.name)).to.deep.equal(['changed on the primary', 'before']);
  });

  it('lets a client read its own writes', async () => {
    const t = await registerTenant(app.url, 'replica-own-writes');
    // Replay paused: every read right after a write must come from the primary (the standby lacks it).
    await pair.caughtUp();
    await pair.pauseReplay();
    try {
      for (let i = 0; i < 5; i++) {
        const host = await createHost(t.owner, t.defaultNetworkId, `paused ${i}`);
        const history = await get(t.owner, `/api/v1/hosts/${host.id}/history`);
        expect(history.map((s: { name: string }) => s.name), `round ${i}`).to.deep.equal([`paused ${i}`]);
      }
      // Replay resumed while a read waits: it is answered by the standby once it has replayed the write.
      const host = await createHost(t.owner, t.defaultNetworkId, 'waited for');
      const caughtUp = await readsTo('replica', 'replica_caught_up');
      const read = get(t.owner, `/api/v1/hosts/${host.id}/history`);
      setTimeout(() => void pair.resumeReplay(), 200);
      expect((await read).map((s: { name: string }) => s.name)).to.deep.equal(['waited for']);
      expect(await readsTo('replica', 'replica_caught_up')).to.equal(caughtUp + 1);
    } finally {
      await pair.resumeReplay();
    }
    // Replaying: create, then read at once, 20 times; a change, then its history and the state as of now.
    for (let i = 0; i < 20; i++) {
      const host = await createHost(t.owner, t.defaultNetworkId, `host ${i}`);
      expect((await get(t.owner, `/api/v1/hosts/${host.id}/history`)).map((s: { name: string }) => s.name), `round ${i}`).to.deep.equal([`host ${i}`]);
      expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${host.id}`, {
        auth: t.owner, body: { name: `renamed ${i}` }, headers: { 'Content-Type': 'application/merge-patch+json' },
      }));
      expect((await get(t.owner, `/api/v1/hosts/${host.id}/history`)).map((s: { name: string }) => s.name), `round ${i}`).to.deep.equal([`renamed ${i}`, `host ${i}`]);
      expect((await get(t.owner, `/api/v1/hosts/${host.id}?at=${encodeURIComponent(new Date().toISOString())}`)).name, `round ${i}`).to.equal(`renamed ${i}`);
    }
  });

  it('lets a client read its own POST, PUT, PATCH and DELETE while another user of its organization reads the paused standby', async () => {
    const t = await registerTenant(app.url, 'replica-every-write');
    const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
    const history = async (auth: Credential, id: string) => {
      const res = await call(app.url, 'GET', `/api/v1/hosts/${id}/history`, { auth });
      if (res.status === 404) return 'not found';
      // Newest first: the newest state ended is a host deleted.
      return (expectOk(res) as Array<{ name: string; valid_to: string | null }>).map((s, i) => `${s.name}${i === 0 && s.valid_to !== null ? ' (deleted)' : ''}`);
    };
    const patch = { 'Content-Type': 'application/merge-patch+json' };
    // Each round: a host made (or not) and replayed by the standby, replay paused, one write by the
    // owner, then the host's history (a replica-eligible read) read by the owner and by a viewer
    // who wrote nothing. Replay is resumed and caught up between rounds, so an earlier round's
    // mark is replayed and cannot send the owner's read to the primary on its own.
    const rounds: Array<{ method: string; before?: string; write: (id?: string) => Promise<string>; own: string[]; stale: string[] | 'not found' }> = [
      { method: 'POST', write: async () => (await createHost(t.owner, t.defaultNetworkId, 'posted')).id, own: ['posted'], stale: 'not found' },
      { method: 'PUT', before: 'before put', own: ['put', 'before put'], stale: ['before put'],
        write: async (id) => expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${id}`, { auth: t.owner, body: { id, name: 'put', hidden: false, tags: [] } })).id },
      { method: 'PATCH', before: 'before patch', own: ['patched', 'before patch'], stale: ['before patch'],
        write: async (id) => expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${id}`, { auth: t.owner, body: { name: 'patched' }, headers: patch })).id },
      { method: 'DELETE', before: 'to delete', own: ['to delete (deleted)'], stale: ['to delete'],
        write: async (id) => { expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${id}`, { auth: t.owner })); return id!; } },
    ];
    for (const round of rounds) {
      const made = round.before === undefined ? undefined : (await createHost(t.owner, t.defaultNetworkId, round.before)).id;
      await pair.caughtUp();
      const ownReads = await readsTo('primary', 'own_write');
      const replicaReads = await readsTo('replica', 'replica');
      await pair.pauseReplay();
      try {
        const id = await round.write(made);
        expect(await history(t.owner, id), `${round.method}: the writer's read`).to.deep.equal(round.own);
        expect(await history(viewer.auth, id), `${round.method}: another user's read`).to.deep.equal(round.stale);
      } finally {
        await pair.resumeReplay();
      }
      // The writer's read went to the primary because of its write, the viewer's to the standby.
      expect(await readsTo('primary', 'own_write'), `${round.method}: reads sent to the primary for the caller's write`).to.equal(ownReads + 1);
      expect(await readsTo('replica', 'replica'), `${round.method}: reads served by the standby`).to.equal(replicaReads + 1);
    }
  });

  it('sends reads to the primary when the standby lags past the bound', async () => {
    const strict = await startTestApp({
      metricsToken: METRICS_TOKEN, databaseUrl: pair.primaryUrl(DATABASE), databaseReplicaUrl: pair.standbyUrl(DATABASE), replicaMaxLagSeconds: 1,
    });
    try {
      const t = await registerTenant(strict.url, 'replica-lagging');
      const host = expectOk(await call(strict.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'before' } }), 201);
      await pair.caughtUp();
      await waitFor('the standby in use', async () => sample(await metrics(strict), 'netinv_db_replica_up') === 1);
      await pair.pauseReplay();
      try {
        await primary.query(`update hosts set name = 'changed on the primary' where id = $1`, [host.id]);
        await waitFor('the standby reported lagging', async () => sample(await metrics(strict), 'netinv_db_replica_up') === 0);
        const history = await get(t.owner, `/api/v1/hosts/${host.id}/history`, strict);
        expect(history.map((s: { name: string }) => s.name)).to.deep.equal(['changed on the primary', 'before']);
      } finally {
        await pair.resumeReplay();
      }
    } finally {
      await strict.close();
    }
  });

  it('answers 200 from the primary when the standby is stopped', async () => {
    // An app that measures the standby once only: a read sent to the stopped standby meets the
    // failure itself, and must be answered from the primary all the same.
    const unprobed = await startTestApp({
      metricsToken: METRICS_TOKEN, databaseUrl: pair.primaryUrl(DATABASE), databaseReplicaUrl: pair.standbyUrl(DATABASE), replicaProbeIntervalMs: 600_000,
    });
    try {
      const t = await registerTenant(unprobed.url, 'replica-down');
      const host = expectOk(await call(unprobed.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'first' } }), 201);
      expectOk(await call(unprobed.url, 'PATCH', `/api/v1/hosts/${host.id}`, { auth: t.owner, body: { name: 'second' }, headers: { 'Content-Type': 'application/merge-patch+json' } }));
      await pair.caughtUp();
      const history = `/api/v1/hosts/${host.id}/history`;
      // Served by the standby first, so that its pool holds connections the stop then cuts.
      expect((await get(t.owner, history, unprobed)).map((s: { name: string }) => s.name)).to.deep.equal(['second', 'first']);
      expect(await readsTo('replica', undefined, unprobed)).to.be.at.least(1);
      pair.stopStandby();
      try {
        for (let i = 0; i < 3; i++) {
          expect((await get(t.owner, history, unprobed)).map((s: { name: string }) => s.name)).to.deep.equal(['second', 'first']);
          expect((await get(t.owner, `/api/v1/hosts/${host.id}?at=${encodeURIComponent(new Date().toISOString())}`, unprobed)).name).to.equal('second');
          const csv = await fetch(`${unprobed.url}/api/v1/hosts/export/csv`, { headers: { Cookie: t.owner.cookie! } });
          expect(csv.status).to.equal(200);
          expect(await csv.text()).to.include('second');
        }
        expect(await readsTo('primary', 'replica_failed', unprobed)).to.be.at.least(1);
        expect(sample(await metrics(unprobed), 'netinv_db_replica_up')).to.equal(0);
        // The app that probes every second finds it down too.
        await waitFor('the standby reported down', async () => sample(await metrics(), 'netinv_db_replica_up') === 0);
      } finally {
        await pair.startStandby();
      }
    } finally {
      await unprobed.close();
    }
    await waitFor('the standby in use again', async () => sample(await metrics(), 'netinv_db_replica_up') === 1, 30_000);
  });
});
