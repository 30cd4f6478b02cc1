// Queue `version-status`: a periodic job (VERSION_STATUS_INTERVAL_MS, hourly) that re-evaluates every
// daemon's version status with the policy of configuration. A status can change without any write
// (a sunset date passes, the policy is changed), so it is recomputed, compared with the last status
// remembered per daemon (Redis hash `<prefix>daemon-version-status`), and each change is logged and
// counted (`daemon_version_status_changes_total{from,to}` on /metrics). The first evaluation of a
// daemon only remembers its status; daemons that are gone are forgotten. Each change is also an
// event (`daemon.version_status_changed`) in the change feed.
import { Worker } from 'bullmq';
import { ACROSS_ORGANIZATIONS, Db } from '../src/core/db.js';
import { QUEUE_NAMES, SHARED_COUNTERS } from '../src/core/queues.js';
import { versionStatus, type VersionStatusName } from '../src/modules/daemons/versionStatus.js';
import { recordEvent } from '../src/modules/events/service.js';
import { timed, workerOptions, type WorkerServices } from './context.js';

export const VERSION_STATUS_SCHEDULER_ID = 'evaluate-version-status';

export interface StatusChange {
  daemonId: string;
  from: VersionStatusName;
  to: VersionStatusName;
}

export const versionStatusKey = (redisPrefix: string) => `${redisPrefix}daemon-version-status`;

export async function evaluateVersionStatuses(
  services: Pick<WorkerServices, 'orm' | 'redis' | 'logger' | 'metrics' | 'versionPolicy' | 'config'>,
  now: Date = new Date(),
): Promise<{ evaluated: number; changes: StatusChange[] }> {
  const db = new Db(services.orm.em.fork());
  // Across organizations: the version policy is evaluated for every daemon in one pass.
  const daemons = await db.query<{ id: string; name: string; version: string | null; organization_id: string; network_id: string }>(
    `${ACROSS_ORGANIZATIONS} select id, name, version, organization_id, network_id from daemons order by id`,
  );
  const key = versionStatusKey(services.config.redisPrefix);
  const previous = await services.redis.hgetall(key);
  const changes: StatusChange[] = [];
  const updates: Record<string, string> = {};
  for (const d of daemons) {
    const status = versionStatus(d.version, services.versionPolicy, now);
    const before = previous[d.id] as VersionStatusName | undefined;
    if (before === status.status) continue;
    updates[d.id] = status.status;
    if (before === undefined) continue;
    changes.push({ daemonId: d.id, from: before, to: status.status });
    const severe = status.status === 'Unsupported' || status.status === 'Deprecated';
    services.logger[severe ? 'warn' : 'info'](
      { daemon_id: d.id, daemon_name: d.name, version: d.version, organization_id: d.organization_id, network_id: d.network_id, from: before, to: status.status, sunset_date: status.sunset_date },
      'daemon version status changed',
    );
    await services.metrics.incrementCounter(SHARED_COUNTERS.versionStatusChanges.name, { from: before, to: status.status });
    // No table write yields this one (the policy or the calendar moved, not the daemon): recorded as such.
    await recordEvent(db, {
      type: 'daemon.version_status_changed', organizationId: d.organization_id, networkId: d.network_id, entityType: 'daemon', entityId: d.id,
      changes: { version_status: [before, status.status] }, data: { id: d.id, name: d.name, version: d.version, version_status: status },
    });
  }
  const live = new Set(daemons.map((d) => d.id));
  const gone = Object.keys(previous).filter((id) => !live.has(id));
  const tx = services.redis.multi();
  if (Object.keys(updates).length) tx.hset(key, updates);
  if (gone.length) tx.hdel(key, ...gone);
  await tx.exec();
  return { evaluated: daemons.length, changes };
}

export async function startVersionStatus(services: WorkerServices): Promise<Worker> {
  await services.queues.versionStatus.upsertJobScheduler(
    VERSION_STATUS_SCHEDULER_ID,
    { every: services.settings.versionStatusIntervalMs },
    { name: 'evaluate', data: {} },
  );
  return new Worker(
    QUEUE_NAMES.versionStatus,
    timed(services, QUEUE_NAMES.versionStatus, async () => {
      const { evaluated, changes } = await evaluateVersionStatuses(services);
      return { evaluated, changed: changes.length };
    }),
    workerOptions(services, QUEUE_NAMES.versionStatus, 1),
  );
}
