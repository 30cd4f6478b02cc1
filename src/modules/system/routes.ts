// Version, liveness and readiness (decisions §8), and the OpenAPI document.
import Joi from 'joi';
import { AppError } from '../../core/errors.js';
import { Db, pendingMigrations } from '../../core/db.js';
import { defineRoutes } from '../../http/pipeline.js';

export const systemRoutes = defineRoutes([
  {
    operationId: 'getVersion', method: 'get', path: '/api/version', group: 'System', summary: 'API and server versions', auth: 'public', unlimited: true,
    response: Joi.object({ api_version: Joi.number().integer(), server_version: Joi.string() }),
    handler: async ({ services }) => ({ api_version: services.config.apiVersion, server_version: services.config.serverVersion }),
  },
  {
    operationId: 'getHealth', method: 'get', path: '/api/health', group: 'System', summary: 'Liveness', auth: 'public', unlimited: true,
    response: Joi.object({ status: Joi.string() }),
    handler: async () => ({ status: 'ok' }),
  },
  {
    operationId: 'getReadiness', method: 'get', path: '/api/ready', group: 'System', auth: 'public',
    summary: 'Readiness: database and Redis reachable, no pending migration (503 otherwise)',
    response: Joi.object({ database: Joi.string(), redis: Joi.string(), pending_migrations: Joi.number(), rate_limiter: Joi.string() }),
    handler: async ({ services }) => {
      const database = await new Db(services.orm.em.fork()).query('select 1').then(() => 'ok', () => 'unreachable');
      const pending = database === 'ok' ? await pendingMigrations(services.orm).catch(() => -1) : -1;
      const redis = await services.redis.ping().then(() => 'ok', () => 'unreachable');
      const report = {
        database,
        redis,
        pending_migrations: pending,
        rate_limiter: services.rateLimiter.degraded ? 'degraded (in-process fallback)' : 'ok',
      };
      if (database !== 'ok' || redis !== 'ok' || pending !== 0) {
        throw new AppError('service_unavailable', { reason: JSON.stringify(report) });
      }
      return report;
    },
  },
]);
