// Replay of every recorded `server_to_daemon.json` (test/fixtures/scanopy-daemon/v*/): the
// poller runs against a stand-in daemon that answers each recorded request path with the recorded
// status and body, and the requests the poller sends are checked against the recorded ones (method,
// path, Authorization, body shape; ids substituted as the upstream replay does: `daemon_id` and
// `network_id` at any depth become this test's daemon and network).
//
// The stand-in behaves like the daemon's entity buffer (reference §1.2 e): its first poll answers
// the recorded body; later polls answer the entities not yet confirmed, i.e. the recorded poll's
// entities and those of the recorded entities-created request (only the first exchange per path was
// recorded, so the entities confirmed there came from a later poll).
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Worker } from 'bullmq';
import { compareVersions, parseVersion } from '../../src/modules/daemons/versionStatus.js';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { SCANOPY_FIXTURES_DIR } from '../support/fixtures.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { daemonRow, db, ROOT, seedDaemon, seedSession, startStandInDaemon, workerServicesFor, type ReceivedRequest } from './support.js';

const FIXTURES = SCANOPY_FIXTURES_DIR;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Exchange {
  method: string;
  path: string;
  request_body: unknown;
  response_status: number;
  response_body: any;
}

const versions = existsSync(FIXTURES)
  ? readdirSync(FIXTURES)
    .filter((d) => existsSync(join(FIXTURES, d, 'server_to_daemon.json')) && parseVersion(d))
    .sort((a, b) => compareVersions(parseVersion(a)!, parseVersion(b)!))
  : [];

/** The upstream substitution: these keys, at any depth (arrays included), get the context's values. */
function substitute(value: unknown, ctx: Record<string, string>): any {
  if (Array.isArray(value)) return value.map((v) => substitute(v, ctx));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k in ctx ? ctx[k] : substitute(v, ctx)]));
  }
  return value;
}

/** The structure of a JSON value: key sets and value types, recursively (an empty recorded array fits any list). */
function shape(value: unknown): unknown {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length ? ['array', shape(value[0])] : ['array'];
  if (typeof value === 'object') return Object.fromEntries(Object.keys(value as object).sort().map((k) => [k, shape((value as Record<string, unknown>)[k])]));
  return typeof value;
}

function expectSameShape(sent: unknown, recorded: unknown, what: string) {
  const relax = (a: unknown, b: unknown): unknown => {
    if (Array.isArray(a) && Array.isArray(b) && b.length === 1) return a.length === 1 ? a : b; // recorded [] fits anything
    if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a)) {
      return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, relax(v, (b as Record<string, unknown>)[k])]));
    }
    return a;
  };
  const s = shape(sent);
  const r = shape(recorded);
  expect(relax(s, r), what).to.deep.equal(r);
}

describe('server-poll replay of the recorded server → daemon exchanges', function () {
  this.timeout(120_000);
  let app: TestApp;
  let t: Tenant;
  let services: ReturnType<typeof workerServicesFor>;
  let syncWorker: Worker;

  before(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
    services = workerServicesFor(app);
    syncWorker = await startDiscoverySync(services);
    await syncWorker.waitUntilReady();
  });
  after(async () => {
    await syncWorker?.close();
    await services?.close();
    await app?.close();
  });

  it('finds the fixtures', () => {
    expect(versions.length, FIXTURES).to.be.greaterThan(5);
  });

  for (const version of versions) {
    it(`replays ${version}`, async () => {
      let recording: { version: string; exchanges: Exchange[] };
      try {
        recording = JSON.parse(readFileSync(join(FIXTURES, version, 'server_to_daemon.json'), 'utf8'));
      } catch {
        return; // an unparseable file is skipped, as upstream does (v0.13.3 has git conflict markers)
      }
      const networkId = await createNetwork(app.url, t.owner, `replay ${version}`);
      const daemonId = randomUUID();
      const ctx = { daemon_id: daemonId, network_id: networkId };
      const recorded = new Map(recording.exchanges.map((e) => [`${e.method} ${e.path}`, { ...e, request_body: substitute(e.request_body, ctx), response_body: substitute(e.response_body, ctx) }]));
      const legacy = compareVersions(parseVersion(recording.version)!, [0, 14, 0]) < 0;

      // The stand-in daemon, with an entity buffer.
      const pollExchange = recorded.get('GET /api/poll');
      const createdExchange = recorded.get('POST /api/discovery/entities-created');
      const buffer = new Map<string, { kind: 'hosts' | 'subnets'; entity: unknown }>();
      for (const kind of ['subnets', 'hosts'] as const) {
        for (const e of (pollExchange?.response_body.data.entities[kind] ?? []) as any[]) buffer.set(kind === 'subnets' ? e.id : e.host.id, { kind, entity: e });
        for (const [pendingId, e] of (createdExchange?.request_body as any)?.[kind] ?? []) buffer.set(pendingId, { kind, entity: kind === 'subnets' ? e : { host: e, interfaces: [], ports: [], services: [] } });
      }
      let polls = 0;
      const daemon = await startStandInDaemon((req: ReceivedRequest) => {
        const exchange = recorded.get(`${req.method} ${req.path}`);
        if (!exchange) return undefined;
        if (req.path === '/api/poll' && polls++ > 0) {
          const pending = [...buffer.values()];
          const entities = { hosts: pending.filter((p) => p.kind === 'hosts').map((p) => p.entity), subnets: pending.filter((p) => p.kind === 'subnets').map((p) => p.entity) };
          return { status: 200, body: { ...exchange.response_body, data: { progress: null, entities } } };
        }
        if (req.path === '/api/discovery/entities-created') {
          const body = req.body as { subnets: [string, unknown][]; hosts: [string, unknown][] };
          for (const [pendingId] of [...body.subnets, ...body.hosts]) buffer.delete(pendingId);
        }
        return { status: exchange.response_status, body: exchange.response_body };
      });

      try {
        const seeded = await seedDaemon(app, {
          orgId: t.orgId, networkId, url: daemon.url,
          // A pre-0.14 daemon has no status/poll API: known by its version, contacted before.
          version: legacy ? recording.version : null, lastSeen: legacy ? new Date() : null, id: daemonId,
        });
        const initiate = recorded.get('POST /api/discovery/initiate');
        // Recordings reuse session ids across versions (one database serves every version here).
        const recordedSessions = [(initiate?.request_body as any)?.session_id, pollExchange?.response_body.data.progress?.session_id].filter(Boolean);
        for (const id of recordedSessions) await db(app).query(`delete from discovery_sessions where id = ?`, [id]);
        const pendingSession = initiate
          ? await seedSession(app, { id: (initiate.request_body as any).session_id, orgId: t.orgId, networkId, daemonId, discoveryType: (initiate.request_body as any).discovery_type, createdAt: new Date(Date.now() - 1000) })
          : undefined;
        const cancel = recorded.get('POST /api/discovery/cancel');
        const cancelSession = cancel
          ? await seedSession(app, { orgId: t.orgId, networkId, daemonId, discoveryType: { type: 'SelfReport', host_id: randomUUID() }, phase: 'Started', cancelRequested: true, createdAt: new Date(Date.now() - 2000) })
          : undefined;

        const first = await pollDaemon(services, daemonId);
        const second = await pollDaemon(services, daemonId);
        const sent = daemon.requests;
        const sentKeys = sent.map((r) => `${r.method} ${r.path}`);

        // The operator's call to the daemon is never the poller's.
        expect(sentKeys).not.to.include('POST /api/initialize');
        const pollerExchanges = [...recorded.keys()].filter((k) => k !== 'POST /api/initialize');

        if (!legacy && !recorded.has('POST /api/first-contact')) {
          // Recorded with only `initialize` (v0.14.2, v0.14.8): nothing of the poller's to compare; the stand-in
          // does not know first-contact, which counts as a failed poll and stops the cycle there.
          expect(pollerExchanges).to.deep.equal([]);
          expect(sentKeys).to.deep.equal(['POST /api/first-contact', 'POST /api/first-contact']);
          expect(first).to.include({ result: 'failed', consecutiveFailures: 1 });
          expect(second).to.include({ result: 'failed', consecutiveFailures: 2 });
          expect(await daemonRow(app, daemonId)).to.include({ consecutive_failures: 2, is_unreachable: false, last_seen: null });
          return;
        }

        // Every recorded exchange of the poller's was sent, with the recorded method and path.
        for (const key of pollerExchanges) expect(sentKeys, `${version}: ${key}`).to.include(key);
        // And nothing was sent that the recording does not know.
        for (const key of sentKeys) expect(recorded.has(key), `${version}: unexpected ${key}`).to.equal(true);

        for (const req of sent) {
          const exchange = recorded.get(`${req.method} ${req.path}`)!;
          const what = `${version} ${req.method} ${req.path}`;
          // Authorization: the daemon's key; pre-0.14 daemons get initiate/cancel without it.
          expect(req.authorization, what).to.equal(legacy ? undefined : `Bearer ${seeded.serverKey}`);
          if (req.method === 'GET') {
            expect(req.body, what).to.equal(undefined); // recorded as {} (the recorder's placeholder for "no body")
            continue;
          }
          expect(req.contentType, what).to.equal('application/json');
          expectSameShape(req.body, exchange.request_body, what);
        }

        if (legacy) {
          expect(sentKeys).to.deep.equal(['POST /api/discovery/initiate']);
          expect(sent[0]!.body).to.deep.equal(initiate!.request_body);
          expect(first).to.include({ result: 'legacy' });
          expect(first.initiated).to.deep.equal([pendingSession]);
          expect((await db(app).one<{ phase: string }>(`select phase from discovery_sessions where id = ?`, [pendingSession]))!.phase).to.equal('Starting');
          return;
        }

        // Contact: first-contact while last_seen was null, then status.
        const contact = recorded.get('POST /api/first-contact')!;
        expect(sentKeys[0]).to.equal('POST /api/first-contact');
        const fc = sent[0]!.body as any;
        expect(fc.daemon_id).to.equal(daemonId);
        expect(fc.server_capabilities).to.deep.equal({ ...(contact.request_body as any).server_capabilities, server_version: app.services.config.serverVersion });
        expect(sentKeys.filter((k) => k === 'GET /api/status')).to.have.length(1);
        expect(sentKeys.indexOf('GET /api/status')).to.be.greaterThan(sentKeys.indexOf('GET /api/poll'));
        expect(first).to.include({ result: 'ok' });
        expect(second).to.include({ result: 'ok' });
        const row = await daemonRow(app, daemonId);
        expect(row.version).to.equal(contact.response_body.data.version);
        expect(row.last_seen).to.be.a('string');
        expect(row).to.include({ consecutive_failures: 0, is_unreachable: false });
        expect(row.capabilities).to.deep.equal(recorded.get('GET /api/status')!.response_body.data.capabilities);

        // Initiate: the pending session, exactly as recorded.
        const initiated = sent.find((r) => r.path === '/api/discovery/initiate')!;
        expect(initiated.body).to.deep.equal(initiate!.request_body);
        expect((await db(app).one<{ phase: string }>(`select phase from discovery_sessions where id = ?`, [pendingSession]))!.phase).to.equal('Starting');

        // Cancel: a bare JSON string, the session asked to stop; the recorded 409 ends it.
        const cancelled = sent.find((r) => r.path === '/api/discovery/cancel')!;
        expect(cancelled.body).to.be.a('string').and.match(UUID);
        expect(cancelled.body).to.equal(cancelSession);
        expect((await db(app).one<{ phase: string; cancel_requested: boolean }>(`select phase, cancel_requested from discovery_sessions where id = ?`, [cancelSession])))
          .to.deep.equal({ phase: 'Cancelled', cancel_requested: false });

        // Entities: handed to discovery-sync, stored, confirmed with the recorded body shape and values.
        const created = sent.filter((r) => r.path === '/api/discovery/entities-created');
        expect(created).to.have.length(1);
        const ack = created[0]!.body as any;
        const want = createdExchange!.request_body as any;
        expect(ack.subnets.map((s: any) => s[0])).to.have.members(want.subnets.map((s: any) => s[0]));
        expect(ack.hosts).to.deep.equal(want.hosts);
        for (const [pendingId, stored] of ack.subnets as [string, any][]) {
          const rec = want.subnets.find((s: any) => s[0] === pendingId)[1];
          expect(stored.id).to.equal(pendingId); // no CIDR clash in this network: the daemon's id is kept
          for (const field of ['cidr', 'name', 'network_id', 'subnet_type', 'description', 'tags', 'source']) expect(stored[field], field).to.deep.equal(rec[field]);
          expect(stored.created_at).to.match(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/);
          const inDb = await db(app).one<{ network_id: string; cidr: string }>(`select network_id, cidr::text as cidr from subnets where id = ?`, [pendingId]);
          expect(inDb).to.deep.equal({ network_id: networkId, cidr: rec.cidr });
        }
        expect(buffer.size, 'every entity confirmed').to.equal(0);
        expect(first.entitiesConfirmed! + second.entitiesConfirmed!).to.equal(want.subnets.length + want.hosts.length);

        // A progress report in the recorded poll is applied to its session (an unknown one is created).
        const progress = pollExchange!.response_body.data.progress;
        if (progress) {
          const session = await db(app).one<{ phase: string; daemon_id: string }>(`select phase, daemon_id from discovery_sessions where id = ?`, [progress.session_id]);
          expect(session).to.deep.equal({ phase: progress.phase, daemon_id: daemonId });
        }
      } finally {
        await daemon.close();
      }
    });
  }
});
