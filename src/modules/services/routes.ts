import { defineRoutes } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import { childGetQuery } from '../hosts/children.js';
import { serviceCreate, serviceListQuery, serviceResponse, serviceUpdate } from './schemas.js';
import { serviceService } from './service.js';

const group = 'Services';

export const serviceRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/services', group, auth: 'Viewer', paginated: true,
    summary: 'List services with their bindings (filters network_id, host_id, service_definition; `at` for a past instant)',
    query: serviceListQuery, response: serviceResponse,
    handler: ({ db, scope, query }) => serviceService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/services', group, auth: 'Member', status: 201,
    summary: 'Add a service (and its bindings) to a host; source is Manual', body: serviceCreate, response: serviceResponse,
    handler: ({ db, scope, body }) => serviceService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/services/:id', group, auth: 'Viewer', summary: 'Get a service with its bindings (as of `at`)',
    params: idParams, query: childGetQuery(), response: serviceResponse,
    handler: ({ db, scope, params, query }) => serviceService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/services/:id', group, auth: 'Member',
    summary: 'Replace a service; `bindings`, when a list, is synced (source never changes)',
    params: idParams, body: serviceUpdate, response: serviceResponse,
    handler: ({ db, scope, params, body }) => serviceService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/services/:id', group, auth: 'Member',
    summary: 'Delete a service and its bindings (they leave every dependency)', params: idParams,
    handler: ({ db, scope, params }) => serviceService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/services/:id/history', group, auth: 'Viewer', summary: 'Every state of a service row, newest first',
    params: idParams, response: serviceResponse,
    handler: ({ db, scope, params }) => serviceService.history(db, scope, params.id),
  },
]);
