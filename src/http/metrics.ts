// `GET /metrics` (decisions §8): Prometheus text format, behind `Authorization: Bearer <METRICS_TOKEN>`
// (401 enveloped otherwise; 404 when no token is configured, as if the route did not exist).
//
// One prom-client Registry per process (no global default registry, so test apps in one process stay
// apart). What it holds:
//  - http_requests_total / http_request_duration_seconds {method, route, status}: this process's
//    requests; `route` is the route template (`/api/v1/hosts/:id`), never the raw path.
//  - bullmq_queue_jobs {queue, state}: waiting, active, delayed, prioritized, failed, completed, read
//    from BullMQ at scrape time.
//  - bullmq_job_duration_seconds {queue, status}: histogram of job attempts, written by the worker
//    processes into Redis (src/core/queues.ts SharedMetricsStore) and read at scrape time.
//  - daemon_version_status_changes_total {from, to}: counted by the version-status job, same path.
// The last two are system-wide values (every API process reports the same numbers; aggregate them
// with max(), not sum()).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { RedisClient } from '../core/redis.js';
import { Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import type { AppConfig } from '../config.js';
import { AppError } from '../core/errors.js';
import { ALL_QUEUES, SHARED_COUNTERS, SharedMetricsStore, type Queues } from '../core/queues.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;

export interface Metrics {
  registry: Registry;
  store: SharedMetricsStore;
  /** Called once per finished request (src/http/requestLog.ts). */
  observeRequest(ctx: Context, seconds: number): void;
}

/** The route template of a request, so labels stay few: never the raw path. */
export function routeLabel(ctx: Context): string {
  if (/^\/admin\/queues(\/|$)/.test(ctx.path)) return '/admin/queues';
  if (ctx.path === '/metrics') return '/metrics';
  const matched = (ctx as Context & { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : 'unmatched';
}

export function createMetrics(config: AppConfig, queues: Queues, redis: RedisClient): Metrics {
  const registry = new Registry();
  const store = new SharedMetricsStore(redis, config.redisPrefix);

  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered by this process',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to its response, by route template',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  new Gauge({
    name: 'bullmq_queue_jobs',
    help: 'Jobs per queue and state (read from BullMQ at scrape time)',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      await Promise.all(
        ALL_QUEUES.map(async (name) => {
          const counts = await queues.byName[name].getJobCounts(...QUEUE_STATES).catch(() => undefined);
          if (!counts) return; // Redis unreachable: no sample rather than a wrong zero
          for (const state of QUEUE_STATES) this.set({ queue: name, state }, counts[state] ?? 0);
        }),
      );
    },
  });

  // A histogram whose buckets are kept in Redis by the workers: exposed as a custom metric object.
  const jobDurationName = 'bullmq_job_duration_seconds';
  const jobDurationHelp = 'Duration of job attempts by queue and outcome (recorded by the worker processes)';
  const jobDurations = {
    name: jobDurationName,
    help: jobDurationHelp,
    type: 'histogram',
    aggregator: 'sum',
    reset() {},
    collect() {},
    async get() {
      const histograms = await store.jobHistograms(ALL_QUEUES).catch(() => []);
      const values = histograms.flatMap((h) => [
        ...h.buckets.map((b) => ({ metricName: `${jobDurationName}_bucket`, labels: { ...h.labels, le: b.le }, value: b.count })),
        { metricName: `${jobDurationName}_sum`, labels: h.labels, value: h.sum },
        { metricName: `${jobDurationName}_count`, labels: h.labels, value: h.count },
      ]);
      return { name: jobDurationName, help: jobDurationHelp, type: 'histogram', aggregator: 'sum', values };
    },
  };
  registry.registerMetric(jobDurations as unknown as Metric);

  const changes = SHARED_COUNTERS.versionStatusChanges;
  new Counter({
    name: changes.name,
    help: changes.help,
    labelNames: changes.labelNames,
    registers: [registry],
    async collect() {
      const values = await store.counterValues(changes.name).catch(() => []);
      this.reset();
      for (const { labels, value } of values) this.inc(labels, value);
    },
  });

  return {
    registry,
    store,
    observeRequest(ctx, seconds) {
      const labels = { method: METHODS.has(ctx.method) ? ctx.method : 'OTHER', route: routeLabel(ctx), status: String(ctx.status) };
      requests.inc(labels);
      durations.observe(labels, seconds);
    },
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Serves `/metrics`; everything else goes on. Mounted after the error envelope. */
export function metricsEndpoint(config: AppConfig, metrics: Metrics) {
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== '/metrics') return next();
    const token = config.metricsToken;
    if (!token) throw new AppError('route_not_found', { method: ctx.method, path: ctx.path });
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw new AppError('method_not_allowed', { method: ctx.method, path: ctx.path });
    }
    const presented = /^Bearer (\S+)$/.exec(ctx.get('Authorization'))?.[1];
    if (!presented || !timingSafeEqual(digest(presented), digest(token))) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new AppError('auth_not_authenticated');
    }
    ctx.set('Content-Type', metrics.registry.contentType);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await metrics.registry.metrics();
  };
}
