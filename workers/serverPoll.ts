// Queue `server-poll`: one job scheduler per `server_poll` daemon (id `poll-<daemon id>`, every
// SERVER_POLL_INTERVAL_MS, 30 s), each job one poll cycle (src/modules/serverPoll/poller.ts) of the
// daemon and organization its data names. A periodic `reconcile` job (and one at start) adds
// schedulers for new daemons, removes those of daemons that are gone (deleted, switched to
// daemon_poll, standby) and re-times them when the interval changes (or rewrites one made before
// jobs named the organization). Schedulers live in Redis, so every worker process may reconcile; only one job runs
// per daemon and period, and a per-daemon lock keeps two polls of one daemon from overlapping.
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { ACROSS_ORGANIZATIONS, Db } from '../src/core/db.js';
import { JOB_RETENTION, pollSchedulerId, QUEUE_NAMES, RECONCILE_SCHEDULER_ID, type ServerPollJob } from '../src/core/queues.js';
import { pollDaemon, type PollOutcome } from '../src/modules/serverPoll/poller.js';
import { timed, workerOptions, type WorkerServices } from './context.js';

const POLL_JOB_OPTS = { removeOnComplete: { age: 3600, count: 500 }, removeOnFail: JOB_RETENTION.removeOnFail };

export interface ReconcileResult {
  added: string[];
  removed: string[];
  retimed: string[];
}

/** Makes the set of poll schedulers equal to the set of pollable daemons. */
export async function reconcileSchedulers(services: WorkerServices): Promise<ReconcileResult> {
  const queue = services.queues.serverPoll;
  const every = services.settings.serverPollIntervalMs;
  const db = new Db(services.orm.em.fork());
  // Pollable: what pollDaemon would not skip (an url, and a key to call the daemon with). Every
  // organization's daemons: the schedulers are one set for all.
  const daemons = await db.query<{ id: string; organization_id: string }>(
    `${ACROSS_ORGANIZATIONS} select d.id, d.organization_id from daemons d join daemon_api_keys k on k.id = d.api_key_id
     where d.mode = 'server_poll' and not d.standby and coalesce(d.url, '') <> '' and k.server_key is not null and k.is_enabled
     order by d.id`,
  );
  const wanted = new Map(daemons.map((d) => [pollSchedulerId(d.id), { daemonId: d.id, organizationId: d.organization_id } satisfies ServerPollJob]));
  const existing = (await queue.getJobSchedulers(0, -1)).filter((s) => s.key.startsWith('poll-'));
  const result: ReconcileResult = { added: [], removed: [], retimed: [] };
  for (const s of existing) {
    if (!wanted.has(s.key)) {
      await queue.removeJobScheduler(s.key);
      result.removed.push(s.key.slice('poll-'.length));
    }
  }
  const have = new Map(existing.map((s) => [s.key, s]));
  for (const [schedulerId, data] of wanted) {
    const current = have.get(schedulerId);
    // A scheduler made before jobs named the organization is rewritten (counted as retimed).
    const currentData = current?.template?.data as Partial<ServerPollJob> | undefined;
    if (current && Number(current.every) === every && currentData?.organizationId === data.organizationId) continue;
    await queue.upsertJobScheduler(schedulerId, { every }, { name: 'poll', data, opts: POLL_JOB_OPTS });
    (current ? result.retimed : result.added).push(data.daemonId);
  }
  if (result.added.length || result.removed.length || result.retimed.length) {
    services.logger.info({ ...result, every_ms: every }, 'server-poll schedulers reconciled');
  }
  return result;
}

export async function processServerPoll(services: WorkerServices, job: Pick<Job<ServerPollJob | Record<string, never>>, 'name' | 'data'>): Promise<PollOutcome | ReconcileResult> {
  if (job.name === 'reconcile') return reconcileSchedulers(services);
  const { daemonId, organizationId } = job.data as ServerPollJob;
  const outcome = await pollDaemon(services, daemonId, organizationId);
  // A daemon that did not answer is a failed job (the dashboard's Failed tab), not a completed one
  // whose value says so. Never retried: its scheduler polls again at the next period.
  if (outcome.result === 'failed') {
    throw new UnrecoverableError(`daemon ${daemonId} did not answer (${outcome.consecutiveFailures} in a row${outcome.isUnreachable ? ', unreachable' : ''}): ${outcome.reason}`);
  }
  if (outcome.result === 'skipped' && outcome.reason !== 'poll already running') {
    // Gone or no longer pollable: stop its scheduler now rather than at the next reconcile.
    await services.queues.serverPoll.removeJobScheduler(pollSchedulerId(daemonId));
  }
  return outcome;
}

export async function startServerPoll(services: WorkerServices): Promise<Worker> {
  await services.queues.serverPoll.upsertJobScheduler(
    RECONCILE_SCHEDULER_ID,
    { every: services.settings.serverPollReconcileMs },
    { name: 'reconcile', data: {}, opts: POLL_JOB_OPTS },
  );
  // At once rather than after the first period; a failure (database not migrated yet…) is retried by the scheduler.
  await reconcileSchedulers(services).catch((err: Error) => services.logger.warn({ err: err.message }, 'initial scheduler reconcile failed'));
  return new Worker(
    QUEUE_NAMES.serverPoll,
    timed(services, QUEUE_NAMES.serverPoll, (job: Job) => processServerPoll(services, job)),
    workerOptions(services, QUEUE_NAMES.serverPoll, services.settings.serverPollConcurrency),
  );
}
