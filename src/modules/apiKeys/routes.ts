import { defineRoutes, type RequestInput } from '../../http/pipeline.js';
import { bulkRoutes } from '../../http/resourceRoutes.js';
import { idParams } from '../../http/schemas.js';
import { apiKeyCreateBody, apiKeyCreated, apiKeyListQuery, apiKeyResponse, apiKeyUpdateBody } from './schemas.js';
import { apiKeyService } from './service.js';
import { revocationSubject, revokeStreamsAfterCommit } from '../events/revocations.js';
import type { Db } from '../../core/db.js';
import type { Scope } from '../../core/scope.js';

/** A key deleted (alone or in a bulk delete): its streams ended once the delete is committed. */
async function removeKey(db: Db, scope: Scope, id: string, req: RequestInput<Scope>): Promise<void> {
  await apiKeyService.remove(db, scope, id);
  revokeStreamsAfterCommit(req, 'end', [revocationSubject.apiKey(id)]);
}

// Keys are managed by a signed-in user (session), never by another key (decisions §2). A key deleted
// ends its event streams on every API process before the answer; one updated or rotated has them
// checked again (disabled, expired, narrowed, or the old secret: ended) (events/revocations.ts).
const apiKeyRoutesDeclared = defineRoutes([
  {
    operationId: 'createApiKey', method: 'post', path: '/api/v1/auth/keys', group: 'API keys', auth: 'Viewer', sessionOnly: true, status: 201,
    summary: 'Create an API key; the plaintext `key` is shown only in this response', body: apiKeyCreateBody, response: apiKeyCreated,
    handler: ({ db, scope, body }) => apiKeyService.create(db, scope, body),
  },
  {
    operationId: 'listApiKeys', method: 'get', path: '/api/v1/auth/keys', group: 'API keys', auth: 'Viewer', sessionOnly: true, summary: 'List your API keys',
    query: apiKeyListQuery, response: apiKeyResponse, paginated: true,
    handler: ({ db, scope, query }) => apiKeyService.list(db, scope, query as { limit: number; offset: number; ids?: string[] }),
  },
  {
    operationId: 'getApiKey', method: 'get', path: '/api/v1/auth/keys/:id', group: 'API keys', auth: 'Viewer', sessionOnly: true, summary: 'Get one of your API keys',
    params: idParams, response: apiKeyResponse,
    handler: ({ db, scope, params }) => apiKeyService.get(db, scope, params.id),
  },
  {
    operationId: 'updateApiKey', method: 'put', path: '/api/v1/auth/keys/:id', group: 'API keys', auth: 'Viewer', sessionOnly: true,
    summary: 'Update name, role, expiry, enabled and network ids (fields left out are kept)', params: idParams, body: apiKeyUpdateBody, response: apiKeyResponse,
    handler: async (req) => {
      const key = await apiKeyService.update(req.db, req.scope, req.params.id, req.body);
      revokeStreamsAfterCommit(req, 'recheck', [revocationSubject.apiKey(key.id)]);
      return key;
    },
  },
  {
    operationId: 'rotateApiKey', method: 'post', path: '/api/v1/auth/keys/:id/rotate', group: 'API keys', auth: 'Viewer', sessionOnly: true,
    summary: 'Replace the key’s secret; the new plaintext is shown once', params: idParams, response: apiKeyCreated,
    handler: async (req) => {
      const rotated = await apiKeyService.rotate(req.db, req.scope, req.params.id);
      revokeStreamsAfterCommit(req, 'recheck', [revocationSubject.apiKey(rotated.api_key.id)]);
      return rotated;
    },
  },
  {
    operationId: 'deleteApiKey', method: 'delete', path: '/api/v1/auth/keys/:id', group: 'API keys', auth: 'Viewer', sessionOnly: true, summary: 'Revoke an API key',
    params: idParams,
    handler: (req) => removeKey(req.db, req.scope, req.params.id, req),
  },
]);

export const apiKeyRoutes = [...apiKeyRoutesDeclared, ...bulkRoutes(apiKeyRoutesDeclared, {
  path: '/api/v1/auth/keys', group: 'API keys', entity: ['ApiKey', 'ApiKeys'],
  schemas: { list: apiKeyListQuery, response: apiKeyResponse },
  list: (db, scope, q) => apiKeyService.list(db, scope, q as { limit: number; offset: number }),
  remove: removeKey,
})];
