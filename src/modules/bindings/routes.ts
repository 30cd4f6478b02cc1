import { defineRoutes } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import { childGetQuery } from '../hosts/children.js';
import { bindingCreate, bindingListQuery, bindingResponse, bindingUpdate } from './schemas.js';
import { bindingService } from './service.js';

const group = 'Bindings';

export const bindingRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/bindings', group, auth: 'Viewer', paginated: true,
    summary: 'List bindings (filters network_id, host_id, service_id, port_id, ip_address_id; `at` for a past instant)',
    query: bindingListQuery, response: bindingResponse,
    handler: ({ db, scope, query }) => bindingService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/bindings', group, auth: 'Member', status: 201,
    summary: 'Bind a service to a port or IP address of its host', body: bindingCreate, response: bindingResponse,
    handler: ({ db, scope, body }) => bindingService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/bindings/:id', group, auth: 'Viewer', summary: 'Get a binding (as of `at`)',
    params: idParams, query: childGetQuery(), response: bindingResponse,
    handler: ({ db, scope, params, query }) => bindingService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/bindings/:id', group, auth: 'Member', summary: 'Replace a binding',
    params: idParams, body: bindingUpdate, response: bindingResponse,
    handler: ({ db, scope, params, body }) => bindingService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/bindings/:id', group, auth: 'Member',
    summary: 'Delete a binding (it leaves every dependency that lists it)', params: idParams,
    handler: ({ db, scope, params }) => bindingService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/bindings/:id/history', group, auth: 'Viewer', summary: 'Every state of a binding, newest first',
    params: idParams, response: bindingResponse,
    handler: ({ db, scope, params }) => bindingService.history(db, scope, params.id),
  },
]);
