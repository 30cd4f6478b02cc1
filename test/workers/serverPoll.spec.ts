// The server-poll worker against stand-in daemons: reachability (5 consecutive failures make a
// daemon unreachable, the next answer clears it), schedulers per daemon, and discovered entities
// going through the discovery-sync queue before they are confirmed to the daemon.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Worker } from 'bullmq';
import { createLogger } from '../../src/core/logger.js';
import { pollSchedulerId, RECONCILE_SCHEDULER_ID, requestSchedulerReconcile } from '../../src/core/queues.js';
import { pollDaemon, UNREACHABLE_AFTER } from '../../src/modules/serverPoll/poller.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { processServerPoll, reconcileSchedulers, startServerPoll } from '../../workers/serverPoll.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { readRecording } from '../support/fixtures.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import {
  daemonRow, db, envelope, seedDaemon, startStandInDaemon, waitFor, workerServicesFor,
  type ReceivedRequest, type Responder, type StandInDaemon,
} from './support.js';

const STATUS = { name: 'scanopy-daemon-serverpoll', mode: 'server_poll', version: '0.14.10', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };
const EMPTY_POLL = { progress: null, entities: { hosts: [], subnets: [] } };

/** A daemon that answers contact and poll like a 0.14 daemon with nothing to report. */
const healthy: Responder = (req) => {
  if (req.path === '/api/first-contact' || req.path === '/api/status') return { status: 200, body: envelope(STATUS) };
  if (req.path === '/api/poll') return { status: 200, body: envelope(EMPTY_POLL) };
  if (req.path === '/api/discovery/initiate') return { status: 200, body: envelope({ session_id: (req.body as { session_id: string }).session_id }) };
  return undefined;
};

describe('server-poll worker', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let services: ReturnType<typeof workerServicesFor>;
  let daemon: StandInDaemon;
  const workers: Worker[] = [];

  beforeEach(async () => {
    // The stand-in daemons listen on loopback: allowed here as DAEMON_ALLOWED_NETWORKS=127.0.0.0/8 would.
    app = await startTestApp({ daemonAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url);
    services = workerServicesFor(app, { serverPollTimeoutMs: 300, serverPollAckWaitMs: 3000 });
    daemon = await startStandInDaemon(healthy);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await daemon.close();
    await services.close();
    await app.close();
  });

  it('a daemon is unreachable after 5 consecutive failed polls and back at the next answer', async () => {
    const d = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    const first = await pollDaemon(services, d.id);
    expect(first).to.include({ result: 'ok', consecutiveFailures: 0, isUnreachable: false });
    // First contact queues the default session (SelfReport) and hands it out; no Network session
    // before a subnet is approved for the daemon (test/daemons/targets.spec.ts).
    expect(daemon.requests.map((r) => r.path)).to.deep.equal(['/api/first-contact', '/api/poll', '/api/discovery/initiate']);
    const sessions = await db(app).query<{ id: string; phase: string; type: string }>(
      `select id, phase, discovery_type->>'type' as type from discovery_sessions where daemon_id = ? order by created_at`, [d.id]);
    expect(sessions.map((x) => [x.type, x.phase])).to.deep.equal([['SelfReport', 'Starting']]);
    expect(first.initiated).to.deep.equal([sessions[0]!.id]);
    expect(daemon.requests[2]!.body).to.deep.equal({ session_id: sessions[0]!.id, discovery_type: { type: 'SelfReport', host_id: null } });
    const seen = await daemonRow(app, d.id);
    expect(seen).to.include({ version: '0.14.10', consecutive_failures: 0, is_unreachable: false });
    expect(seen.last_seen).to.be.a('string');
    const states = async () => Number((await db(app).one<{ n: string }>(`select count(*) as n from daemons_history where id = ?`, [d.id]))!.n);
    const statesBefore = await states();

    // Every way of not answering counts: silence past the timeout, a reset connection, the daemon's
    // plain-text 401, a server error, a body that is no success envelope.
    const failures: Responder[] = [
      () => 'hang',
      () => 'drop',
      () => ({ status: 401, body: 'Invalid API key' }),
      () => ({ status: 500, body: { success: false, error: 'boom', meta: { api_version: 1, server_version: '0.14.10' } } }),
      () => ({ status: 200, body: { hello: 'world' } }),
    ];
    const shown = async () => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}`, { auth: t.owner }));
    expect(await shown()).to.include({ last_error: null, last_error_at: null, consecutive_failures: 0 });
    for (let i = 1; i <= UNREACHABLE_AFTER; i += 1) {
      daemon.respond = failures[i - 1]!;
      const outcome = await pollDaemon(services, d.id);
      expect(outcome, `failure ${i}`).to.include({ result: 'failed', consecutiveFailures: i, isUnreachable: i >= UNREACHABLE_AFTER });
      // Where users look, from the first failure on: the daemon itself says why.
      const view = await shown();
      expect(view, `failure ${i}`).to.include({ consecutive_failures: i, is_unreachable: i >= UNREACHABLE_AFTER, last_error: outcome.reason });
      expect(view.last_error, `failure ${i}`).to.be.a('string').and.not.empty;
      expect(Date.parse(view.last_error_at)).to.be.closeTo(Date.now(), 60_000);
      const row = await daemonRow(app, d.id);
      expect(row).to.include({ consecutive_failures: i, is_unreachable: i >= UNREACHABLE_AFTER, last_seen: seen.last_seen, version: '0.14.10' });
      // Counting failures alone makes no new history state of the daemon.
      if (i < UNREACHABLE_AFTER) expect(await states()).to.equal(statesBefore);
    }
    // After the first contact, contact is GET /api/status; a failed contact ends the cycle (no poll).
    expect(daemon.requests.slice(3).map((r) => `${r.method} ${r.path}`)).to.deep.equal(Array(UNREACHABLE_AFTER).fill('GET /api/status'));
    expect(await states()).to.equal(statesBefore + 1); // becoming unreachable is a state

    // Unreachable daemons are still polled, so they come back by themselves.
    daemon.respond = () => 'drop';
    expect(await pollDaemon(services, d.id)).to.include({ result: 'failed', consecutiveFailures: 6, isUnreachable: true });
    daemon.respond = healthy;
    const back = await pollDaemon(services, d.id);
    expect(back).to.include({ result: 'ok', consecutiveFailures: 0, isUnreachable: false });
    const after = await daemonRow(app, d.id);
    expect(after).to.include({ consecutive_failures: 0, is_unreachable: false });
    expect(await shown()).to.include({ last_error: null, last_error_at: null, is_unreachable: false });
    expect(Date.parse(after.last_seen!)).to.be.greaterThan(Date.parse(seen.last_seen!));

    // A success in between resets the count.
    for (const respond of [() => 'hang' as const, healthy, () => 'hang' as const]) {
      daemon.respond = respond;
      await pollDaemon(services, d.id);
    }
    expect(await daemonRow(app, d.id)).to.include({ consecutive_failures: 1, is_unreachable: false });
  });

  it('polls each server_poll daemon on its scheduler, through unreachable and back', async () => {
    services = workerServicesFor(app, { serverPollIntervalMs: 150, serverPollTimeoutMs: 100, serverPollReconcileMs: 60_000 });
    const d = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    const worker = await startServerPoll(services);
    workers.push(worker);
    const schedulers = (await services.queues.serverPoll.getJobSchedulers(0, -1)).map((s) => s.key).sort();
    expect(schedulers).to.deep.equal([pollSchedulerId(d.id), RECONCILE_SCHEDULER_ID].sort());

    await waitFor('first contact', async () => (await daemonRow(app, d.id)).last_seen);
    daemon.respond = () => 'hang';
    await waitFor('unreachable', async () => (await daemonRow(app, d.id)).is_unreachable, 15_000);
    expect((await daemonRow(app, d.id)).consecutive_failures).to.be.at.least(UNREACHABLE_AFTER);
    // Each poll that got no answer is a failed job (the dashboard's Failed tab), with the reason, never retried.
    // (A job is marked failed just after its poll wrote the failure: wait for the last one.)
    const failed = await waitFor('failed poll jobs', async () => {
      const jobs = await services.queues.serverPoll.getJobs(['failed']);
      return jobs.length >= UNREACHABLE_AFTER && jobs;
    }, 10_000);
    expect(failed[0]!.failedReason).to.match(new RegExp(`^daemon ${d.id} did not answer \\(\\d+ in a row`));
    expect(failed.every((j) => j.attemptsMade === 1)).to.equal(true);
    daemon.respond = healthy;
    await waitFor('reachable again', async () => {
      const row = await daemonRow(app, d.id);
      return !row.is_unreachable && row.consecutive_failures === 0;
    }, 15_000);
    // Back, it is polled again (the poll follows the status contact that cleared the failures).
    await waitFor('a poll after coming back', async () => daemon.requests.filter((r: ReceivedRequest) => r.path === '/api/poll').length >= 2, 10_000);

    // A daemon provisioned now is scheduled on request (the API's queues), not only at the next reconcile.
    const other = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    await requestSchedulerReconcile(app.services.queues);
    await waitFor('scheduler of the new daemon', async () => (await daemonRow(app, other.id)).last_seen, 10_000);

    // A deleted daemon's scheduler goes away with its next job (or the next reconcile).
    await db(app).query(`delete from daemons where id = ?`, [d.id]);
    await waitFor('scheduler removed', async () => !(await services.queues.serverPoll.getJobScheduler(pollSchedulerId(d.id))), 10_000);
  });

  it('reconciles schedulers with the daemons table', async () => {
    const a = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    const b = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: '', mode: 'daemon_poll' });
    const first = await reconcileSchedulers(services);
    expect(first.added.sort()).to.deep.equal([a.id, b.id].sort());
    expect(await reconcileSchedulers(services)).to.deep.equal({ added: [], removed: [], retimed: [] });
    const scheduler = await services.queues.serverPoll.getJobScheduler(pollSchedulerId(a.id));
    expect(scheduler).to.include({ every: services.settings.serverPollIntervalMs });
    expect(scheduler!.template?.data).to.deep.equal({ daemonId: a.id, organizationId: t.orgId });
    // A scheduler from before jobs named the organization is rewritten with it; such a job still polls.
    await services.queues.serverPoll.upsertJobScheduler(pollSchedulerId(a.id), { every: services.settings.serverPollIntervalMs }, { name: 'poll', data: { daemonId: a.id } });
    expect(await reconcileSchedulers(services)).to.deep.equal({ added: [], removed: [], retimed: [a.id] });
    expect((await services.queues.serverPoll.getJobScheduler(pollSchedulerId(a.id)))!.template?.data).to.deep.equal({ daemonId: a.id, organizationId: t.orgId });
    expect(await processServerPoll(services, { name: 'poll', data: { daemonId: a.id } })).to.include({ result: 'ok', daemonId: a.id });

    await db(app).query(`delete from daemons where id = ?`, [a.id]);
    await db(app).query(`update daemons set standby = true where id = ?`, [b.id]);
    const gone = await reconcileSchedulers(services);
    expect({ ...gone, removed: gone.removed.sort() }).to.deep.equal({ added: [], removed: [a.id, b.id].sort(), retimed: [] });

    await db(app).query(`update daemons set standby = false where id = ?`, [b.id]);
    await reconcileSchedulers(services);
    const faster = { ...services, settings: { ...services.settings, serverPollIntervalMs: 5000 } };
    expect(await reconcileSchedulers(faster)).to.deep.equal({ added: [], removed: [], retimed: [b.id] });
    expect(await services.queues.serverPoll.getJobScheduler(pollSchedulerId(b.id))).to.include({ every: 5000 });

    // Only what a poll would not skip: a server_poll daemon without an url, or whose key is disabled, is not scheduled.
    await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: '' });
    const noKey = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    await db(app).query(`update daemon_api_keys set is_enabled = false where id = ?`, [noKey.keyId]);
    expect(await reconcileSchedulers(faster)).to.deep.equal({ added: [], removed: [], retimed: [] });

    // Provisioning through the API asks for a reconcile at once.
    expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: t.owner, body: { name: 'p', network_id: t.defaultNetworkId, url: daemon.url } }), 201);
    expect(await app.services.queues.serverPoll.getJob('reconcile-now')).to.not.equal(undefined);
  });

  it('hands discovered entities to discovery-sync and confirms them once stored', async () => {
    // The subnet and host of a real SelfReport (daemon_to_server.json of v0.14.10).
    const recorded = readRecording('v0.14.10', 'daemon_to_server.json');
    const body = (path: string) => structuredClone(recorded.exchanges.find((e) => e.path === path).request_body);
    const subnet = { ...body('/api/v1/subnets'), network_id: t.defaultNetworkId };
    const host = body('/api/v1/hosts/discovery');
    host.host.network_id = t.defaultNetworkId;

    // The daemon's buffer: what it reports until confirmed; the host only once its subnet is confirmed.
    const pending = new Map<string, { kind: 'subnets' | 'hosts'; entity: any }>([[subnet.id, { kind: 'subnets', entity: subnet }]]);
    const confirmations: any[] = [];
    let failAck = false;
    daemon.respond = (req) => {
      if (req.path === '/api/poll') {
        const list = [...pending.values()];
        const entities = { subnets: list.filter((p) => p.kind === 'subnets').map((p) => p.entity), hosts: list.filter((p) => p.kind === 'hosts').map((p) => p.entity) };
        return { status: 200, body: envelope({ progress: null, entities }) };
      }
      if (req.path === '/api/discovery/entities-created') {
        if (failAck) return 'drop';
        const ack = req.body as { subnets: [string, any][]; hosts: [string, any][] };
        confirmations.push(ack);
        for (const [id] of [...ack.subnets, ...ack.hosts]) pending.delete(id);
        if (ack.subnets.some(([id]) => id === subnet.id)) pending.set(host.host.id, { kind: 'hosts', entity: host });
        return { status: 200, body: envelope('Created entities acknowledged') };
      }
      return healthy(req);
    };
    const d = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    // Background work, not inline: with no discovery-sync worker, nothing is stored or confirmed.
    const quick = { ...services, settings: { ...services.settings, serverPollAckWaitMs: 200 } };
    expect(await pollDaemon(quick, d.id)).to.include({ result: 'ok', entitiesQueued: 1, entitiesConfirmed: 0 });
    expect(await pollDaemon(quick, d.id)).to.include({ entitiesQueued: 1, entitiesConfirmed: 0 });
    expect(await services.queues.discoverySync.getJobCounts('waiting')).to.deep.equal({ waiting: 1 }); // the re-sent subnet is the same job
    expect(await db(app).query(`select id from subnets where id = ?`, [subnet.id])).to.deep.equal([]);
    expect(confirmations).to.deep.equal([]);

    const worker = await startDiscoverySync(services);
    workers.push(worker);
    // A lost confirmation is sent again on a later poll (the daemon reports the subnet again).
    failAck = true;
    expect(await pollDaemon(services, d.id)).to.include({ entitiesQueued: 1, entitiesConfirmed: 0 });
    expect(await db(app).query(`select id from subnets where id = ?`, [subnet.id])).to.have.length(1);
    failAck = false;
    expect(await pollDaemon(services, d.id)).to.include({ entitiesQueued: 1, entitiesConfirmed: 1 });
    expect(confirmations).to.have.length(1);
    expect(confirmations[0].hosts).to.deep.equal([]);
    expect(confirmations[0].subnets).to.have.length(1);
    expect(confirmations[0].subnets[0][0]).to.equal(subnet.id);
    expect(confirmations[0].subnets[0][1]).to.include({ id: subnet.id, cidr: '172.25.0.0/28', network_id: t.defaultNetworkId });

    // Now the host: stored with its children, confirmed with a HostResponse.
    expect(await pollDaemon(services, d.id)).to.include({ entitiesQueued: 1, entitiesConfirmed: 1 });
    const [pendingId, response] = confirmations[1].hosts[0];
    expect(pendingId).to.equal(host.host.id);
    expect(response).to.include({ id: host.host.id, name: '0672ed547c0c', network_id: t.defaultNetworkId });
    expect(response.interfaces.map((i: any) => i.ip_address)).to.deep.equal(['172.25.0.4']);
    expect(response.ports.map((p: any) => [p.number, p.protocol])).to.deep.equal([[60073, 'Tcp']]);
    expect(response.services.map((s: any) => s.name)).to.deep.equal(['Scanopy Daemon']);
    expect(response.if_entries).to.deep.equal([]);
    expect(pending.size).to.equal(0);
    const counts = await services.queues.discoverySync.getJobCounts('completed', 'failed', 'waiting', 'active');
    expect(counts).to.deep.equal({ completed: 2, failed: 0, waiting: 0, active: 0 });
    // Job durations reach the shared histogram read by /metrics.
    // (The subnet re-sent after its lost confirmation ran again if the daemon's running session changed meanwhile: a new session ingests what it finds.)
    const [histogram] = await services.metrics.jobHistograms(['discovery-sync']);
    expect(histogram!.count).to.be.within(2, 3);

    // The daemon sends the host again (as after a lost confirmation), but a user changed the host
    // meanwhile: the kept job's answer is gone, so that job goes, and the next sending is a new job,
    // answered afresh (with the user's edit, which discovery keeps).
    pending.set(host.host.id, { kind: 'hosts', entity: host });
    await db(app).query(`update hosts set name = 'renamed by a user' where id = ?`, [host.host.id]);
    expect(await pollDaemon(services, d.id)).to.include({ entitiesQueued: 1, entitiesConfirmed: 0 });
    expect(await pollDaemon(services, d.id)).to.include({ entitiesQueued: 1, entitiesConfirmed: 1 });
    expect(confirmations[2].hosts[0][1]).to.include({ id: host.host.id, name: 'renamed by a user' });
    expect(pending.size).to.equal(0);

    // The next session finds the same host, unchanged: the kept job of the last one is not its
    // answer; the host is ingested again and counts for this session (else its end would take the
    // host offline).
    await db(app).query(`update discovery_sessions set phase = 'Complete', finished_at = now() where daemon_id = ? and phase <> 'Complete'`, [d.id]);
    const next = randomUUID();
    await db(app).query(`insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase) values (?, ?, ?, ?, '{"type":"Network"}'::jsonb, 'Scanning')`,
      [next, t.orgId, t.defaultNetworkId, d.id]);
    pending.set(host.host.id, { kind: 'hosts', entity: host });
    expect(await pollDaemon(services, d.id)).to.include({ entitiesQueued: 1, entitiesConfirmed: 1 });
    expect((await db(app).query<{ last_discovery_id: string }>(`select last_discovery_id from hosts where id = ?`, [host.host.id]))[0]!.last_discovery_id).to.equal(next);
  });

  it('skips what is not to be polled', async () => {
    services.logger = createLogger('silent'); // the keyless daemon is logged as an error
    const poll = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: '', mode: 'daemon_poll' });
    expect(await pollDaemon(services, poll.id)).to.include({ result: 'skipped', reason: 'not a server_poll daemon' });
    const standby = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    await db(app).query(`update daemons set standby = true where id = ?`, [standby.id]);
    expect(await pollDaemon(services, standby.id)).to.include({ result: 'skipped', reason: 'standby' });
    const keyless = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url });
    await db(app).query(`update daemon_api_keys set is_enabled = false where id = ?`, [keyless.keyId]);
    expect(await pollDaemon(services, keyless.id)).to.include({ result: 'skipped', reason: 'no key' });
    expect(await pollDaemon(services, randomUUID())).to.include({ result: 'skipped', reason: 'daemon not found' });
    expect(daemon.requests).to.deep.equal([]);
  });
});
