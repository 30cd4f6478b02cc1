// Discovery schedules run by the discovery-schedule worker (issue 39.1), with a schedule's "minute"
// made short (DISCOVERY_SCHEDULE_MINUTE_MS, test-only) so many intervals pass quickly. Nothing here
// asserts on wall-clock time: it waits for counts, with generous timeouts.
// - two worker instances and one schedule: every interval runs once, none twice (the job scheduler
//   keyed by the schedule's id; the run's row per interval);
// - a schedule with nothing to scan disables itself after max_failures runs and says why;
// - daemon_poll: the agent's next request-work answers the scheduled session (of the schedule's
//   subnets); its Failed end counts as a failure at the next run, a Complete one clears them;
// - server_poll: the worker has the poller initiate the scheduled session at once (not at the next poll);
// - a worker started after the schedulers were lost (a Redis flush) registers them again.
import { expect } from 'chai';
import type { Job, Worker } from 'bullmq';
import { scheduleSchedulerId } from '../../src/modules/schedules/jobs.js';
import { jitterMs } from '../../src/modules/schedules/timing.js';
import { startDiscoverySchedule } from '../../workers/discoverySchedule.js';
import { startServerPoll } from '../../workers/serverPoll.js';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { postSubnet } from '../discovery/reports.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { envelope, seedDaemon, startStandInDaemon, waitFor, workerServicesFor, type Responder } from '../workers/support.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };

/** How long a count may take to be reached on a loaded machine. */
const LONG = 90_000;

interface Processed { worker: number; name: string; id: string | undefined; result: { outcome?: string; scheduledFor?: number } }

describe('discovery schedules: the scheduler', function () {
  this.timeout(240_000);
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let lan: { id: string };
  const opened: Array<ReturnType<typeof workerServicesFor>> = [];
  const workers: Worker[] = [];
  let processed: Processed[] = [];

  /** A worker process's discovery-schedule worker, its "minute" `minuteMs` long; what it processes is recorded. */
  const startWorker = async (minuteMs: number) => {
    const services = workerServicesFor(app, { scheduleMinuteMs: minuteMs });
    opened.push(services);
    const worker = await startDiscoverySchedule(services);
    const n = workers.push(worker);
    worker.on('completed', (job: Job, result: unknown) => processed.push({ worker: n, name: job.name, id: job.id, result: (result ?? {}) as Processed['result'] }));
    await worker.waitUntilReady();
    return { services, worker };
  };
  const schedules = (daemonId = d.id) => `/api/v1/daemons/${daemonId}/schedules`;
  const schedule = async (id: string) => expectOk(await call(app.url, 'GET', `${schedules()}/${id}`, { auth: t.owner }));
  const runs = (id: string) => sql<{ scheduled_for: string; outcome: string; session_id: string | null; error: string | null }>(
    app, `select scheduled_for, outcome, session_id, error from discovery_schedule_runs where organization_id = ? and schedule_id = ? order by scheduled_for`, [t.orgId, id]);
  const requestWork = async () => expectOk(await d.post(`/api/daemons/${d.id}/request-work`, STATUS)) as [any, boolean];
  const update = async (work: any, change: Record<string, unknown>) => expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, ...change }));
  /** The sessions every new daemon gets (SelfReport, and the Network one its first approval queues), run to their end. */
  const drain = async () => {
    for (;;) {
      const [work] = await requestWork();
      if (!work) return;
      await update(work, { phase: 'Complete', progress: 100, finished_at: new Date().toISOString() });
    }
  };

  beforeEach(async () => {
    processed = [];
    app = await startTestApp();
    t = await registerTenant(app.url, 'scheduler');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    lan = await postSubnet(d, t.defaultNetworkId, '198.18.1.0/24');
    expectOk(await d.post(`/api/daemons/${d.id}/update-capabilities`, { has_docker_socket: false, interfaced_subnet_ids: [lan.id] }));
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await Promise.all(opened.splice(0).map((s) => s.close()));
    await app.close();
  });

  it('two workers and one schedule over 30 intervals: 30 runs, none twice', async () => {
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
    await drain();
    const minuteMs = 150;
    await startWorker(minuteMs);
    await startWorker(minuteMs);
    const made = expectOk(await call(app.url, 'POST', schedules(), { auth: t.owner, body: { every_minutes: 1 } }), 201);
    await waitFor('30 runs', async () => (await runs(made.id)).length >= 30, LONG);
    expectOk(await call(app.url, 'PATCH', `${schedules()}/${made.id}`, { auth: t.owner, body: { enabled: false } }));
    await waitFor('the scheduler removed', async () => !(await opened[0]!.queues.discoverySchedule.getJobScheduler(scheduleSchedulerId(made.id))), LONG);
    await Promise.all(workers.map((w) => w.close()));

    // The ticks that ran an interval (one taken after the schedule was disabled runs nothing).
    const ticks = processed.filter((p) => p.name === 'tick' && p.result.outcome !== 'disabled');
    const ran = await runs(made.id);
    // Every tick ran its interval: none was a second delivery of an interval already run.
    expect(ticks.filter((p) => p.result.outcome === 'duplicate')).to.deep.equal([]);
    const intervals = ticks.map((p) => p.result.scheduledFor);
    expect(new Set(intervals).size).to.equal(intervals.length);
    expect(ran.map((r) => Date.parse(r.scheduled_for))).to.deep.equal([...intervals].sort((a, b) => a! - b!));
    // One run per interval, in order, none twice. An interval whose tick came after the next one was
    // due is not caught up (BullMQ's job scheduler plans the next tick from now): a machine stalled
    // for longer than a 150 ms "minute" misses one, so gaps are whole intervals, not exactly one.
    const gaps = ran.slice(1).map((r, i) => Date.parse(r.scheduled_for) - Date.parse(ran[i]!.scheduled_for));
    expect(gaps.filter((g) => g <= 0 || g % minuteMs !== 0), `gaps ${gaps.join(', ')}`).to.deep.equal([]);
    // (Which worker takes a tick is BullMQ's to decide: on a busy machine one may take them all, so
    // that is not asserted; both ran throughout.) The first run queued the session, the next ones
    // found it pending (a skip, not a failure).
    expect(ran.filter((r) => r.outcome === 'queued')).to.have.length(1);
    expect(ran.slice(1).every((r) => r.outcome === 'skipped')).to.equal(true);
    const sessions = await sql(app, `select id from discovery_sessions where organization_id = ? and daemon_id = ? and discovery_type->>'type' = 'Network' and phase = 'Pending'`, [t.orgId, d.id]);
    expect(sessions.map((s) => s.id)).to.include(ran.find((r) => r.outcome === 'queued')!.session_id);
    expect(await schedule(made.id)).to.include({ consecutive_failures: 0, last_outcome: 'skipped', enabled: false, disabled_reason: null });
  });

  it('with a jitter, each interval runs once, delayed by that interval\'s own jitter', async () => {
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
    await drain();
    const minuteMs = 200;
    await startWorker(minuteMs);
    await startWorker(minuteMs);
    // 60 s of jitter in a 60 s minute: up to a whole interval (here 200 ms).
    const made = expectOk(await call(app.url, 'POST', schedules(), { auth: t.owner, body: { every_minutes: 1, jitter_seconds: 60 } }), 201);
    await waitFor('8 runs', async () => (await runs(made.id)).length >= 8, LONG);
    expectOk(await call(app.url, 'PATCH', `${schedules()}/${made.id}`, { auth: t.owner, body: { enabled: false } }));
    await Promise.all(workers.map((w) => w.close()));
    const ran = await runs(made.id);
    const delayed = processed.filter((p) => p.name === 'tick' && p.result.outcome === 'delayed') as Array<Processed & { result: { delay: number; scheduledFor: number } }>;
    const direct = processed.filter((p) => p.name === 'tick' && ['queued', 'skipped', 'failed'].includes(p.result.outcome!));
    const delayedRuns = processed.filter((p) => p.name === 'run' && p.result.outcome !== 'disabled');
    expect(delayed.length).to.be.greaterThan(0);
    for (const p of delayed) expect(p.result.delay).to.equal(jitterMs(made.id, p.result.scheduledFor, 60, minuteMs));
    for (const p of direct) expect(jitterMs(made.id, p.result.scheduledFor!, 60, minuteMs)).to.equal(0);
    // Each delayed run is its tick's interval, once.
    expect(delayedRuns.map((p) => p.result.scheduledFor).sort()).to.deep.equal(delayed.map((p) => p.result.scheduledFor).filter((ms) => ran.some((r) => Date.parse(r.scheduled_for) === ms)).sort());
    expect(delayedRuns.concat(direct).filter((p) => p.result.outcome === 'duplicate')).to.deep.equal([]);
    // Whole intervals apart (a delayed run still waiting when the schedule was disabled runs nothing).
    const gaps = ran.slice(1).map((r, i) => Date.parse(r.scheduled_for) - Date.parse(ran[i]!.scheduled_for));
    expect(gaps.filter((g) => g <= 0 || g % minuteMs !== 0)).to.deep.equal([]);
  });

  it('disables itself after max_failures failures in a row, and says why', async () => {
    // No subnet approved: nothing to scan.
    await startWorker(100);
    const made = expectOk(await call(app.url, 'POST', schedules(), { auth: t.owner, body: { every_minutes: 1, max_failures: 3 } }), 201);
    const off = await waitFor('the schedule disabled', async () => {
      const s = await schedule(made.id);
      return !s.enabled && s;
    }, LONG);
    expect(off).to.include({ enabled: false, consecutive_failures: 3, last_outcome: 'failed', next_run_at: null });
    expect(off.last_error).to.contain('no subnet is approved');
    expect(off.disabled_reason).to.equal(`Disabled after 3 consecutive failures; the last: ${off.last_error}`);
    expect(await opened[0]!.queues.discoverySchedule.getJobScheduler(scheduleSchedulerId(made.id))).to.equal(undefined);
    const ran = await runs(made.id);
    expect(ran.map((r) => r.outcome)).to.deep.equal(['failed', 'failed', 'failed']);
    // Enabled again: its failures are cleared and it runs again.
    const on = expectOk(await call(app.url, 'PATCH', `${schedules()}/${made.id}`, { auth: t.owner, body: { enabled: true } }));
    expect(on).to.include({ enabled: true, consecutive_failures: 0, disabled_reason: null });
    await waitFor('a run after enabling', async () => (await runs(made.id)).length > 3, LONG);
  });

  it('daemon_poll: the agent’s next request-work answers the scheduled session; a Failed one counts, a Complete one clears', async () => {
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
    const other = await postSubnet(d, t.defaultNetworkId, '198.18.2.0/24');
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: other.id } }));
    await drain();
    await startWorker(300);
    const made = expectOk(await call(app.url, 'POST', schedules(), { auth: t.owner, body: { every_minutes: 1, subnet_ids: [lan.id] } }), 201);

    const queued = await waitFor('a queued run', async () => (await runs(made.id)).find((r) => r.outcome === 'queued'), LONG);
    const [work] = await requestWork();
    expect(work.session_id).to.equal(queued.session_id);
    expect(work.discovery_type).to.include({ type: 'Network' });
    expect(work.discovery_type.subnet_ids).to.deep.equal([lan.id]); // the schedule's subset, not every approved subnet
    await update(work, { phase: 'Failed', error: 'interface went away', finished_at: new Date().toISOString() });
    const failed = await waitFor('the failure counted', async () => {
      const s = await schedule(made.id);
      return s.consecutive_failures === 1 && s;
    }, LONG);
    expect(failed.last_error).to.equal(`the scheduled session ${work.session_id} failed: interface went away`);
    expect(failed.enabled).to.equal(true);

    const next = await waitFor('the next queued run', async () => {
      const s = await schedule(made.id);
      return s.last_session_id !== work.session_id && s.last_session_id;
    }, LONG);
    const [again] = await requestWork();
    expect(again.session_id).to.equal(next);
    await update(again, { phase: 'Complete', progress: 100, finished_at: new Date().toISOString() });
    const cleared = await waitFor('the failures cleared', async () => {
      const s = await schedule(made.id);
      return s.last_session_id !== next && s.consecutive_failures === 0 && s;
    }, LONG);
    expect(cleared).to.include({ last_error: null, enabled: true });
  });

  it('server_poll: the scheduled session is initiated on the daemon at once, not at its next poll', async () => {
    const status = { name: 'scanopy-daemon-serverpoll', mode: 'server_poll', version: '0.14.10', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };
    const healthy: Responder = (req) => {
      if (req.path === '/api/first-contact' || req.path === '/api/status') return { status: 200, body: envelope(status) };
      if (req.path === '/api/poll') return { status: 200, body: envelope({ progress: null, entities: { hosts: [], subnets: [] } }) };
      if (req.path === '/api/discovery/initiate') return { status: 200, body: envelope({ session_id: (req.body as { session_id: string }).session_id }) };
      return undefined;
    };
    const agent = await startStandInDaemon(healthy);
    try {
      // Polled every 10 minutes: only the schedule's own poll can reach it within this test.
      const services = workerServicesFor(app, { scheduleMinuteMs: 400, serverPollIntervalMs: 600_000 });
      opened.push(services);
      const sp = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: agent.url });
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${sp.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
      await pollDaemon(services, sp.id, t.orgId); // first contact: its SelfReport and first Network sessions, ended here as if they ran
      await sql(app, `update discovery_sessions set phase = 'Complete', finished_at = now() where organization_id = ? and daemon_id = ?`, [t.orgId, sp.id]);
      const pollWorker = await startServerPoll(services);
      workers.push(pollWorker);
      await waitFor('the poll at start', async () => agent.requests.filter((r) => r.path === '/api/poll').length >= 1, LONG);
      await startWorker(400);
      const made = expectOk(await call(app.url, 'POST', schedules(sp.id), { auth: t.owner, body: { every_minutes: 1 } }), 201);
      const queued = await waitFor('a queued run', async () => (await runs(made.id)).find((r) => r.outcome === 'queued'), LONG);
      const initiate = await waitFor('the initiate', async () => agent.requests.find((r) => r.path === '/api/discovery/initiate' && (r.body as { session_id: string }).session_id === queued.session_id), LONG);
      expect((initiate.body as { discovery_type: { type: string; subnet_ids: string[] } }).discovery_type).to.include({ type: 'Network' });
      expect((initiate.body as { discovery_type: { subnet_ids: string[] } }).discovery_type.subnet_ids).to.deep.equal([lan.id]);
    } finally {
      await Promise.all(workers.splice(0).map((w) => w.close()));
      await agent.close();
    }
  });

  it('a worker started after the schedulers were lost (Redis flushed) registers them again', async () => {
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
    const made = expectOk(await call(app.url, 'POST', schedules(), { auth: t.owner, body: { every_minutes: 1 } }), 201);
    // No worker ran: the API's sync request waits in the queue. Everything of the queue is lost.
    const queue = workerServicesFor(app).queues;
    await queue.discoverySchedule.obliterate({ force: true });
    expect(await queue.discoverySchedule.getJobSchedulers()).to.deep.equal([]);
    await queue.close();
    const { services } = await startWorker(100);
    expect(await services.queues.discoverySchedule.getJobScheduler(scheduleSchedulerId(made.id))).to.not.equal(undefined);
    await waitFor('runs', async () => (await runs(made.id)).length >= 2, LONG);
  });
});
