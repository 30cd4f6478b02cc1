import { defineRoutes } from '../../http/pipeline.js';
import { bulkRoutes } from '../../http/resourceRoutes.js';
import { idParams } from '../../http/schemas.js';
import { daemonKeyCreateBody, daemonKeyCreated, daemonKeyListQuery, daemonKeyResponse, daemonKeyUpdateBody } from './schemas.js';
import { daemonKeyService } from './service.js';

// Daemon keys are managed by a signed-in Admin (session), like user keys (decisions §2, §7).
const daemonKeyRoutesDeclared = defineRoutes([
  {
    group: 'Daemon API keys', auth: 'Admin', sessionOnly: true, operationId: 'createDaemonApiKey', method: 'post', path: '/api/v1/auth/daemon', status: 201,
    summary: 'Create a daemon API key for one network; the plaintext `key` is shown only in this response',
    body: daemonKeyCreateBody, response: daemonKeyCreated,
    handler: ({ db, scope, body }) => daemonKeyService.create(db, scope, body),
  },
  {
    group: 'Daemon API keys', auth: 'Admin', sessionOnly: true, operationId: 'listDaemonApiKeys', method: 'get', path: '/api/v1/auth/daemon', summary: 'List daemon API keys (filter network_id)',
    query: daemonKeyListQuery, response: daemonKeyResponse, paginated: true,
    handler: ({ db, scope, query }) => daemonKeyService.list(db, scope, query as { limit: number; offset: number; network_id?: string }),
  },
  {
    group: 'Daemon API keys', auth: 'Admin', sessionOnly: true, operationId: 'getDaemonApiKey', method: 'get', path: '/api/v1/auth/daemon/:id', summary: 'Get a daemon API key', params: idParams, response: daemonKeyResponse,
    handler: ({ db, scope, params }) => daemonKeyService.get(db, scope, params.id),
  },
  {
    group: 'Daemon API keys', auth: 'Admin', sessionOnly: true, operationId: 'updateDaemonApiKey', method: 'put', path: '/api/v1/auth/daemon/:id', summary: 'Update name, expiry and enabled (fields left out are kept)',
    params: idParams, body: daemonKeyUpdateBody, response: daemonKeyResponse,
    handler: ({ db, scope, params, body }) => daemonKeyService.update(db, scope, params.id, body),
  },
  {
    group: 'Daemon API keys', auth: 'Admin', sessionOnly: true, operationId: 'rotateDaemonApiKey', method: 'post', path: '/api/v1/auth/daemon/:id/rotate', summary: 'Replace the key’s secret; the new plaintext is shown once',
    params: idParams, response: daemonKeyCreated,
    handler: ({ db, scope, params }) => daemonKeyService.rotate(db, scope, params.id),
  },
  {
    group: 'Daemon API keys', auth: 'Admin', sessionOnly: true, operationId: 'deleteDaemonApiKey', method: 'delete', path: '/api/v1/auth/daemon/:id', summary: 'Revoke a daemon API key (its daemons then get 401)', params: idParams,
    handler: ({ db, scope, params }) => daemonKeyService.remove(db, scope, params.id),
  },
]);

export const daemonKeyRoutes = [...daemonKeyRoutesDeclared, ...bulkRoutes(daemonKeyRoutesDeclared, {
  path: '/api/v1/auth/daemon', group: 'Daemon API keys', entity: ['DaemonApiKey', 'DaemonApiKeys'],
  schemas: { list: daemonKeyListQuery, response: daemonKeyResponse },
  list: (db, scope, q) => daemonKeyService.list(db, scope, q as { limit: number; offset: number; network_id?: string }),
  remove: (db, scope, id) => daemonKeyService.remove(db, scope, id),
})];
