// Builds the process's services and the Koa application from them.
import zlib from 'node:zlib';
import Koa from 'koa';
import compress from 'koa-compress';
import Router from '@koa/router';
import type { AppConfig } from './config.js';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createOrm } from './database.js';
import { setRowSecurity } from './core/db.js';
import { AppError } from './core/errors.js';
import { createLogger, type Logger } from './core/logger.js';
import { ReadReplica } from './core/readReplica.js';
import { loadQueueSettings, openQueues, type QueueSettings } from './core/queues.js';
import { createRedis } from './core/redis.js';
import type { Services } from './services.js';
import { authenticate } from './http/authenticate.js';
import type { RequestsInFlight } from './http/inFlight.js';
import { errorEnvelope } from './http/envelope.js';
import { jsonBody } from './http/jsonBody.js';
import { bodyDepthLimit } from './http/bodyDepth.js';
import { csvBody } from './http/csvBody.js';
import { createMetrics, metricsEndpoint } from './http/metrics.js';
import { queueDashboard } from './http/queueDashboard.js';
import { apiDocs } from './http/apiDocs.js';
import { buildOpenApi } from './http/openapi.js';
import { mountRoutes } from './http/pipeline.js';
import { RateLimiter } from './http/rateLimiter.js';
import { HeavyReadBudget } from './modules/topology/heavyReadBudget.js';
import { requestLog } from './http/requestLog.js';
import { securityHeaders } from './http/securityHeaders.js';
import { webApp } from './http/webApp.js';
import { LoginGuard } from './modules/accounts/loginGuard.js';
import { KeyUsageRecorder } from './modules/apiKeys/keyUsage.js';
import { EventHub } from './modules/events/hub.js';
import { GraphCache } from './modules/topology/graphCache.js';
import { Counter } from 'prom-client';
import { routes } from './routes.js';
import { loadSecretKeys, useSecretKeys } from './core/secretBox.js';

export async function createServices(
  config: AppConfig,
  logger: Logger = createLogger(config.logLevel),
  queueSettings: QueueSettings = loadQueueSettings(),
  /** An ORM already connected to config.databaseUrl (the test suite reuses them); else a new one. */
  existingOrm?: MikroORM,
): Promise<Services> {
  useSecretKeys(loadSecretKeys(config)); // before anything can read or store a credential
  const orm = existingOrm ?? await createOrm(config.databaseUrl);
  setRowSecurity(orm.em, config.databaseRowSecurity);
  // A Redis outage must not stall requests: no offline queue, fail fast, reconnect in the background.
  // One Redis or a Redis Cluster (REDIS_CLUSTER_NODES): src/core/redis.ts decides.
  const redis = createRedis(config, 'requests');
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
  await new Promise<void>((resolve) => {
    if (redis.status === 'ready') return resolve();
    redis.once('ready', () => resolve());
    redis.once('error', () => resolve()); // refused: start degraded now (it reconnects in the background)
    setTimeout(resolve, 2000).unref(); // no answer: start degraded rather than not at all
  });
  // The queues of src/core/queues.ts, over one fail-fast connection (enqueueing, /metrics, /admin/queues).
  const queues = openQueues(config, queueSettings, { shared: true });
  const metrics = createMetrics(config, queues, redis);
  const topologyLookups = new Counter({
    name: 'topology_graph_cache_total', help: 'Topology graph reads: served from this process\'s cache (hit), drawn (miss), or drawn because a change awaited its event (bypass)',
    labelNames: ['result'] as const, registers: [metrics.registry],
  });
  // Lag-tolerant reads on a standby (DATABASE_REPLICA_URL); a standby down now is opened when it answers.
  let readReplica: ReadReplica | undefined;
  if (config.databaseReplicaUrl) {
    readReplica = new ReadReplica(orm, redis, logger, metrics.registry, {
      replicaUrl: config.databaseReplicaUrl, maxLagSeconds: config.replicaMaxLagSeconds, waitMs: config.replicaWaitMs,
      redisPrefix: config.redisPrefix, probeIntervalMs: config.replicaProbeIntervalMs, openOrm: async (url) => {
        const replicaOrm = await createOrm(url);
        setRowSecurity(replicaOrm.em, config.databaseRowSecurity);
        return replicaOrm;
      },
    });
    await readReplica.start();
  }
  return {
    config,
    orm,
    redis,
    logger,
    rateLimiter: new RateLimiter(redis, { keyPrefix: config.redisPrefix, redisTimeoutMs: config.rateLimitRedisTimeoutMs, testClock: config.rateLimitTestClock }),
    loginGuard: new LoginGuard(redis, config.redisPrefix),
    keyUsage: new KeyUsageRecorder(orm, logger),
    queues,
    queueSettings,
    metrics,
    // Connects at the first stream (or start()): a process without streams needs no listener.
    events: new EventHub({
      databaseUrl: config.databaseUrl, orm, logger, heartbeatMs: config.eventHeartbeatMs, maxBufferBytes: config.eventStreamBufferBytes, recheckMs: config.eventRecheckMs,
    }),
    topologyGraphs: new GraphCache(config.topologyCacheItems, (result) => topologyLookups.inc({ result })),
    heavyReadBudget: new HeavyReadBudget(redis, config.heavyReadBudget, { keyPrefix: config.redisPrefix, redisTimeoutMs: config.rateLimitRedisTimeoutMs, testClock: config.rateLimitTestClock, perAddress: config.heavyReadBudgetPerAddress }),
    readReplica,
  };
}

/** `keepOrm`: the ORM was passed to createServices and its owner closes it. */
export async function closeServices(services: Services, opts: { keepOrm?: boolean } = {}): Promise<void> {
  await services.events.stop();
  await services.readReplica?.stop();
  await services.keyUsage.close();
  await services.queues.close();
  services.redis.disconnect();
  if (!opts.keepOrm) await services.orm.close(true);
}

/** `inFlight`: counts the requests being handled (the API process waits for them at shutdown). */
export function buildApp(services: Services, opts: { inFlight?: RequestsInFlight } = {}): Koa {
  const app = new Koa({ proxy: services.config.trustProxy });
  // Errors after the answer started (the envelope handles the rest): a client leaving an event
  // stream is how streams end, not an error; anything else is logged, not printed by Koa.
  app.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ERR_STREAM_PREMATURE_CLOSE' || err.code === 'ECONNRESET') return;
    services.logger.error({ err: err.message }, 'response failed after it started');
  });
  const router = new Router();
  mountRoutes(router, routes, services);

  // Built at the first request for it, once per app: it takes ~110 ms of CPU, which every app
  // (and every test's app) would otherwise pay at start.
  let openApi: ReturnType<typeof buildOpenApi> | undefined;
  const openApiDocument = () => (openApi ??= buildOpenApi(routes, services.config));
  router.get('/api/openapi.json', (ctx) => { ctx.body = openApiDocument(); });

  if (opts.inFlight) app.use(opts.inFlight.middleware);
  app.use(requestLog(services.logger, services.metrics.observeRequest));
  // Answers over 1 KB are compressed when the client accepts it (topology payloads are large).
  app.use(compress({ threshold: 1024, br: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }, gzip: { level: 6 }, deflate: false }));
  app.use(errorEnvelope(services.config));
  app.use(securityHeaders()); // same-origin writes, nosniff, no-store, CSP on HTML
  app.use(metricsEndpoint(services.config, services.metrics)); // GET /metrics (bearer token)
  app.use(queueDashboard(services)); // /admin/queues (Owner/Admin session); bull-board parses its own bodies
  app.use(webApp({ shareFrameAncestors: services.config.shareFrameAncestors })); // the web application's pages and assets (dist/web)
  app.use(apiDocs('Network inventory API')); // /api/docs: Swagger UI over /api/openapi.json
  app.use(jsonBody(routes)); // JSON bodies of 1 MiB, or the route's declared bodyLimit
  app.use(bodyDepthLimit()); // at most 32 levels of arrays and objects
  app.use(csvBody(routes)); // text/csv bodies of the routes that take them (the host import, 4 MiB)
  const pathsWhere = (flag: 'unlimited' | 'limitByAddress') => new Set(routes.filter((r) => r[flag]).map((r) => r.path));
  app.use(authenticate(services, { unlimited: pathsWhere('unlimited'), byAddress: pathsWhere('limitByAddress') }));
  app.use(router.routes());
  // Nothing matched: 405 when the path exists with another method, 404 otherwise, both enveloped.
  app.use(async (ctx) => {
    const match = router.match(ctx.path, ctx.method);
    if (match.path.length > 0 && !match.route) {
      ctx.set('Allow', [...new Set(match.path.flatMap((l) => l.methods))].join(', '));
      throw new AppError('method_not_allowed', { method: ctx.method, path: ctx.path });
    }
    throw new AppError('route_not_found', { method: ctx.method, path: ctx.path });
  });
  return app;
}
