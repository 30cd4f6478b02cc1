import Joi from 'joi';
import { defineRoutes } from '../../http/pipeline.js';
import { at, idParams } from '../../http/schemas.js';
import { daemonSubnetBody } from '../discovery/schemas.js';
import { daemonContext, ingestSubnet } from '../discovery/ingest.js';
import { subnetCreate, subnetListQuery, subnetResponse, subnetUpdate } from './schemas.js';
import { subnetService } from './service.js';

export const subnetRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/subnets', group: 'Subnets', auth: 'Viewer', summary: 'List subnets', paginated: true,
    query: subnetListQuery, response: subnetResponse,
    handler: ({ db, scope, query }) => subnetService.list(db, scope, query),
    // A daemon gets every subnet of its network, unpaged (reference daemon-protocol §1.1 step 4).
    daemon: { query: Joi.object().unknown(true), handler: ({ db, scope }) => subnetService.listForDaemon(db, scope) },
  },
  {
    method: 'post', path: '/api/v1/subnets', group: 'Subnets', auth: 'Member', status: 201, summary: 'Create a subnet',
    body: subnetCreate, response: subnetResponse,
    handler: ({ db, scope, body }) => subnetService.create(db, scope, body),
    // A daemon's subnet: the network's subnet with that CIDR when there is one, else created (reference §2.1).
    daemon: { status: 200, body: daemonSubnetBody, handler: ({ db, scope, body }) => ingestSubnet(db, daemonContext(scope), body) },
  },
  {
    method: 'get', path: '/api/v1/subnets/:id', group: 'Subnets', auth: 'Viewer', summary: 'Get a subnet (as of `at`)',
    params: idParams, query: Joi.object({ at: at() }), response: subnetResponse,
    handler: ({ db, scope, params, query }) => subnetService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/subnets/:id', group: 'Subnets', auth: 'Member', summary: 'Replace a subnet',
    params: idParams, body: subnetUpdate, response: subnetResponse,
    handler: ({ db, scope, params, body }) => subnetService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/subnets/:id', group: 'Subnets', auth: 'Member', summary: 'Delete an unused subnet', params: idParams,
    handler: ({ db, scope, params }) => subnetService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/subnets/:id/history', group: 'Subnets', auth: 'Viewer', summary: 'Every state of a subnet, newest first',
    params: idParams, response: subnetResponse,
    handler: ({ db, scope, params }) => subnetService.history(db, scope, params.id),
  },
]);
