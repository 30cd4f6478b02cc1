import { defineRoutes } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import { childGetQuery } from '../hosts/children.js';
import { portCreate, portListQuery, portResponse, portUpdate } from './schemas.js';
import { portService } from './service.js';

const group = 'Ports';

export const portRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/ports', group, auth: 'Viewer', paginated: true,
    summary: 'List ports (filters network_id, host_id, number, protocol; `at` for a past instant)',
    query: portListQuery, response: portResponse,
    handler: ({ db, scope, query }) => portService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/ports', group, auth: 'Member', status: 201,
    summary: 'Add a port to a host ((number, protocol) unique per host; `type` derived)', body: portCreate, response: portResponse,
    handler: ({ db, scope, body }) => portService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/ports/:id', group, auth: 'Viewer', summary: 'Get a port (as of `at`)',
    params: idParams, query: childGetQuery(), response: portResponse,
    handler: ({ db, scope, params, query }) => portService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/ports/:id', group, auth: 'Member', summary: 'Replace a port',
    params: idParams, body: portUpdate, response: portResponse,
    handler: ({ db, scope, params, body }) => portService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/ports/:id', group, auth: 'Member',
    summary: 'Delete a port (its bindings go with it and leave every dependency)', params: idParams,
    handler: ({ db, scope, params }) => portService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/ports/:id/history', group, auth: 'Viewer', summary: 'Every state of a port, newest first',
    params: idParams, response: portResponse,
    handler: ({ db, scope, params }) => portService.history(db, scope, params.id),
  },
]);
