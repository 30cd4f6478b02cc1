import { defineRoutes } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import { childGetQuery } from '../hosts/children.js';
import { interfaceCreate, interfaceListQuery, interfaceResponse, interfaceUpdate } from './schemas.js';
import { interfaceService } from './service.js';

const group = 'Interfaces';

export const interfaceRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/interfaces', group, auth: 'Viewer', paginated: true,
    summary: 'List interfaces (filters network_id, host_id, ip_address_id, admin_status, oper_status; `at` for a past instant)',
    query: interfaceListQuery, response: interfaceResponse,
    handler: ({ db, scope, query }) => interfaceService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/interfaces', group, auth: 'Member', status: 201,
    summary: 'Add an interface (ifTable entry) to a host; `neighbor` is read-only', body: interfaceCreate, response: interfaceResponse,
    handler: ({ db, scope, body }) => interfaceService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/interfaces/:id', group, auth: 'Viewer', summary: 'Get an interface (as of `at`)',
    params: idParams, query: childGetQuery(), response: interfaceResponse,
    handler: ({ db, scope, params, query }) => interfaceService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/interfaces/:id', group, auth: 'Member', summary: 'Replace an interface (`neighbor` is kept)',
    params: idParams, body: interfaceUpdate, response: interfaceResponse,
    handler: ({ db, scope, params, body }) => interfaceService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/interfaces/:id', group, auth: 'Member', summary: 'Delete an interface', params: idParams,
    handler: ({ db, scope, params }) => interfaceService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/interfaces/:id/history', group, auth: 'Viewer', summary: 'Every state of an interface, newest first',
    params: idParams, response: interfaceResponse,
    handler: ({ db, scope, params }) => interfaceService.history(db, scope, params.id),
  },
]);
