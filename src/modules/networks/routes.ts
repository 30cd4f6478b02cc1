import Joi from 'joi';
import { defineRoutes } from '../../http/pipeline.js';
import { at, idParams } from '../../http/schemas.js';
import { networkListQuery, networkResponse, networkWrite } from './schemas.js';
import { networkService } from './service.js';

export const networkRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/networks', group: 'Networks', summary: 'List the networks the caller may see', auth: 'Viewer',
    query: networkListQuery, response: networkResponse, paginated: true,
    handler: ({ db, scope, query }) => networkService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/networks', group: 'Networks', summary: 'Create a network', auth: 'Admin', status: 201,
    body: networkWrite, response: networkResponse,
    handler: ({ db, scope, body }) => networkService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/networks/:id', group: 'Networks', summary: 'Get a network (as of `at`)', auth: 'Viewer',
    params: idParams, query: Joi.object({ at: at() }), response: networkResponse,
    handler: ({ db, scope, params, query }) => networkService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/networks/:id', group: 'Networks', summary: 'Replace a network', auth: 'Admin',
    params: idParams, body: networkWrite, response: networkResponse,
    handler: ({ db, scope, params, body }) => networkService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/networks/:id', group: 'Networks', summary: 'Delete a network', auth: 'Admin',
    params: idParams,
    handler: ({ db, scope, params }) => networkService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/networks/:id/history', group: 'Networks', summary: 'Every state of a network, newest first', auth: 'Viewer',
    params: idParams, response: networkResponse,
    handler: ({ db, scope, params }) => networkService.history(db, scope, params.id),
  },
]);
