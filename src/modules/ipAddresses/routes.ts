import { defineRoutes } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import { childGetQuery } from '../hosts/children.js';
import { ipAddressCreate, ipAddressListQuery, ipAddressResponse, ipAddressUpdate } from './schemas.js';
import { ipAddressService } from './service.js';

const group = 'IP addresses';

export const ipAddressRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/ip-addresses', group, auth: 'Viewer', paginated: true,
    summary: 'List IP addresses (filters network_id, host_id, subnet_id; `at` for a past instant)',
    query: ipAddressListQuery, response: ipAddressResponse,
    handler: ({ db, scope, query }) => ipAddressService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/ip-addresses', group, auth: 'Member', status: 201,
    summary: 'Add an IP address to a host (inside its subnet, on the host’s network)', body: ipAddressCreate, response: ipAddressResponse,
    handler: ({ db, scope, body }) => ipAddressService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/ip-addresses/:id', group, auth: 'Viewer', summary: 'Get an IP address (as of `at`)',
    params: idParams, query: childGetQuery(), response: ipAddressResponse,
    handler: ({ db, scope, params, query }) => ipAddressService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/ip-addresses/:id', group, auth: 'Member', summary: 'Replace an IP address',
    params: idParams, body: ipAddressUpdate, response: ipAddressResponse,
    handler: ({ db, scope, params, body }) => ipAddressService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/ip-addresses/:id', group, auth: 'Member',
    summary: 'Delete an IP address (its bindings go with it and leave every dependency)', params: idParams,
    handler: ({ db, scope, params }) => ipAddressService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/ip-addresses/:id/history', group, auth: 'Viewer', summary: 'Every state of an IP address, newest first',
    params: idParams, response: ipAddressResponse,
    handler: ({ db, scope, params }) => ipAddressService.history(db, scope, params.id),
  },
]);
