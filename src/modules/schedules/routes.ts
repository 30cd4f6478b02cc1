import { defineRoutes, type RequestInput } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import type { Services } from '../../services.js';
import { requestScheduleSync } from './jobs.js';
import { MAX_SCHEDULES_PER_DAEMON, scheduleCreate, scheduleParams, schedulePatch, scheduleResponse } from './schemas.js';
import { scheduleService as s, type ScheduleInput } from './service.js';

const group = 'Daemons';
const path = '/api/v1/daemons/:id/schedules';

/**
 * A committed change reaches the schedule's job scheduler now (made, re-timed or removed by the
 * worker); never an error: the change is done, and the worker re-registers every schedule at start
 * and every DISCOVERY_SCHEDULE_RECONCILE_MS anyway.
 */
const syncAfterCommit = (afterCommit: RequestInput['afterCommit'], services: Services, organizationId: string, scheduleId: string) =>
  afterCommit('tell the discovery-schedule worker of a schedule change (its periodic reconcile will)', () => requestScheduleSync(services.queues, scheduleId, organizationId));

export const scheduleRoutes = defineRoutes([
  {
    group, auth: 'Viewer', operationId: 'listDaemonSchedules', method: 'get', path, params: idParams, list: true, response: scheduleResponse,
    summary: `A daemon’s discovery schedules (at most ${MAX_SCHEDULES_PER_DAEMON}), oldest first: how each runs, next and last run, the last outcome and error`,
    handler: ({ db, scope, params }) => s.list(db, scope, params.id),
  },
  {
    group, auth: 'Admin', operationId: 'createDaemonSchedule', method: 'post', path, params: idParams, status: 201, body: scheduleCreate, response: scheduleResponse,
    summary: 'Schedule the daemon’s Network discovery: every_minutes, or cron in timezone; a jitter; optionally a subset of its approved subnets. Each interval queues a session as Scan now does (a pending or running one: skipped); after max_failures failures in a row it disables itself (disabled_reason)',
    handler: async ({ db, scope, params, body, services, afterCommit }) => {
      const created = await s.create(db, scope, params.id, body as ScheduleInput);
      syncAfterCommit(afterCommit, services, scope.organizationId, created.id as string);
      return created;
    },
  },
  {
    group, auth: 'Viewer', operationId: 'getDaemonSchedule', method: 'get', path: `${path}/:schedule_id`, params: scheduleParams, response: scheduleResponse,
    summary: 'Get a discovery schedule',
    handler: ({ db, scope, params }) => s.get(db, scope, params.id, params.schedule_id),
  },
  {
    group, auth: 'Admin', operationId: 'updateDaemonSchedule', method: 'patch', path: `${path}/:schedule_id`, params: scheduleParams, body: schedulePatch, response: scheduleResponse,
    summary: 'Change a discovery schedule (the fields given): enable or disable it (enabling clears its failures and disabled_reason), re-time it, change its jitter or subnets',
    handler: async ({ db, scope, params, body, services, afterCommit }) => {
      const updated = await s.update(db, scope, params.id, params.schedule_id, body as ScheduleInput);
      syncAfterCommit(afterCommit, services, scope.organizationId, params.schedule_id);
      return updated;
    },
  },
  {
    group, auth: 'Admin', operationId: 'deleteDaemonSchedule', method: 'delete', path: `${path}/:schedule_id`, params: scheduleParams,
    summary: 'Delete a discovery schedule (its sessions stay)',
    handler: async ({ db, scope, params, services, afterCommit }) => {
      await s.remove(db, scope, params.id, params.schedule_id);
      syncAfterCommit(afterCommit, services, scope.organizationId, params.schedule_id);
      return null;
    },
  },
]);
