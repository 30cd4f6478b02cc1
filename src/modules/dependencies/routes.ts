import Joi from 'joi';
import { defineRoutes } from '../../http/pipeline.js';
import { at, idParams } from '../../http/schemas.js';
import { dependencyCreate, dependencyListQuery, dependencyResponse, dependencyUpdate } from './schemas.js';
import { dependencyService } from './service.js';

const group = 'Dependencies';

export const dependencyRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/dependencies', group, auth: 'Viewer', paginated: true,
    summary: 'List dependencies (filters network_id, dependency_type; `at` for a past instant)',
    query: dependencyListQuery, response: dependencyResponse,
    handler: ({ db, scope, query }) => dependencyService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/dependencies', group, auth: 'Member', status: 201,
    summary: 'Create a dependency (members on its network, in order; source is Manual)', body: dependencyCreate, response: dependencyResponse,
    handler: ({ db, scope, body }) => dependencyService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/dependencies/:id', group, auth: 'Viewer', summary: 'Get a dependency (as of `at`)',
    params: idParams, query: Joi.object({ at: at() }), response: dependencyResponse,
    handler: ({ db, scope, params, query }) => dependencyService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/dependencies/:id', group, auth: 'Member',
    summary: 'Replace a dependency (spec §4.3; network_id must be its own; source never changes)',
    params: idParams, body: dependencyUpdate, response: dependencyResponse,
    handler: ({ db, scope, params, body }) => dependencyService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/dependencies/:id', group, auth: 'Member', summary: 'Delete a dependency', params: idParams,
    handler: ({ db, scope, params }) => dependencyService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/dependencies/:id/history', group, auth: 'Viewer', summary: 'Every state of a dependency, newest first',
    params: idParams, response: dependencyResponse,
    handler: ({ db, scope, params }) => dependencyService.history(db, scope, params.id),
  },
]);
