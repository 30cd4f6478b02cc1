import Joi from 'joi';
import { defineRoutes } from '../../http/pipeline.js';
import { bulkCreateRoute, bulkRoutes, patchRoute } from '../../http/resourceRoutes.js';
import { at, idParams, uuid } from '../../http/schemas.js';
import { hostResponse } from './response.js';
import { BULK_MAX_IP_ADDRESSES, createHosts } from './bulkCreate.js';
import { accessOf, declaredRoute } from '../../http/resourceRoutes.js';
import { CSV_TYPES } from '../../http/csvBody.js';
import type { RequestInput } from '../../http/pipeline.js';
import { csvImportBody, csvImportQuery, csvImportResponse, importHostsCsv } from './csvImportService.js';
import { hostHistoryQuery, hostHistoryResponse } from './historyWithChildren.js';
import { hostCreate, hostListQuery, hostUpdate } from './schemas.js';
import { hostService } from './service.js';
import { hostTable } from './table.js';

const hostRoutesDeclared = defineRoutes([
  {
    operationId: 'listHosts', method: 'get', path: '/api/v1/hosts', group: 'Hosts', auth: 'Viewer', paginated: true, readsTogether: true,
    summary: 'List hosts with their children (filters network_id, tag_ids, hidden, q; `at` for a past instant)',
    query: hostListQuery, response: hostResponse,
    handler: ({ db, scope, query }) => hostService.list(db, scope, query),
  },
  {
    operationId: 'createHost', method: 'post', path: '/api/v1/hosts', group: 'Hosts', auth: 'Member', status: 201,
    summary: 'Create a host, optionally with its IP addresses, ports and services', body: hostCreate, response: hostResponse,
    handler: ({ db, scope, body }) => hostService.create(db, scope, body),
  },
  {
    operationId: 'getHost', method: 'get', path: '/api/v1/hosts/:id', group: 'Hosts', auth: 'Viewer', readsTogether: true, summary: 'Get a host with its children (as of `at`)',
    params: idParams, query: Joi.object({ at: at() }), response: hostResponse,
    handler: ({ db, scope, params, query }) => hostService.get(db, scope, params.id, query.at),
  },
  {
    operationId: 'updateHost', method: 'put', path: '/api/v1/hosts/:id', group: 'Hosts', auth: 'Member',
    summary: 'Replace a host; ip_addresses, ports and services lists, when given, are synced (one transaction)',
    params: idParams, body: hostUpdate, response: hostResponse,
    handler: ({ db, scope, params, body }) => hostService.update(db, scope, params.id, body),
  },
  {
    ...patchRoute({
      path: '/api/v1/hosts', group: 'Hosts', entity: ['Host', 'Hosts'], noun: 'a host', writeRole: 'Member',
      schemas: { update: hostUpdate, response: hostResponse },
      lock: (db, scope, id) => hostTable.get(db, scope, id, undefined, true),
      get: (db, scope, id) => hostService.get(db, scope, id),
      update: (db, scope, id, body) => hostService.update(db, scope, id, body),
      keptUnlessSent: ['ip_addresses', 'ports', 'services'],
    }),
    summary: 'Change some fields of a host (JSON merge patch, RFC 7396: fields left out are kept); ip_addresses, ports or services sent replace that list, left out (or null) it is kept',
  },
  {
    operationId: 'deleteHost', method: 'delete', path: '/api/v1/hosts/:id', group: 'Hosts', auth: 'Member', summary: 'Delete a host and its children', params: idParams,
    handler: ({ db, scope, params }) => hostService.remove(db, scope, params.id),
  },
  {
    operationId: 'getHostHistory', method: 'get', path: '/api/v1/hosts/:id/history', group: 'Hosts', auth: 'Viewer', list: true, readsTogether: true,
    summary: 'Every state of a host with its children, newest first: one entry per instant at which the host or one of its IP addresses, ports, services, bindings or interfaces changed, each the host as `GET /hosts/{id}?at=` answers it then, with `changes` (what changed then); paged by `limit` and `before`',
    params: idParams, query: hostHistoryQuery, response: hostHistoryResponse,
    handler: ({ db, scope, params, query }) => hostService.history(db, scope, params.id, query),
  },
  {
    operationId: 'consolidateHosts', method: 'put', path: '/api/v1/hosts/:destination/consolidate/:other', group: 'Hosts', auth: 'Member',
    summary: 'Merge a duplicate host (other) into destination: its addresses, ports, services and interfaces move, dependencies stay whole, other is deleted; both histories kept',
    params: Joi.object({ destination: uuid().required().description('The host that stays'), other: uuid().required().description('The duplicate, deleted once merged') }),
    response: hostResponse,
    handler: ({ db, scope, params }) => hostService.consolidate(db, scope, params.destination, params.other),
  },
]);

/**
 * `POST /api/v1/hosts/import/csv`: many host creates and updates in one, so whoever may create a
 * host may call it (role, session only, organization-wide from the create's declaration), and
 * network-limited keys only into their networks (the network_id check).
 */
export const hostImportRoutes = defineRoutes([{
  operationId: 'importHostsCsv', method: 'post', path: '/api/v1/hosts/import/csv', group: 'Hosts',
  ...accessOf(declaredRoute(hostRoutesDeclared, 'post', '/api/v1/hosts')),
  summary: 'Import hosts from CSV into one network: a dry run (default) answers what would be created, changed and refused; dry_run=false applies it in one transaction, all or nothing',
  query: csvImportQuery, body: csvImportBody, consumes: CSV_TYPES, response: csvImportResponse, errors: [422],
  handler: ({ db, scope, query, body }: RequestInput) => importHostsCsv(db, scope, query.network_id, query.dry_run, body),
}]);

const bulkCreate = bulkCreateRoute(hostRoutesDeclared, {
  path: '/api/v1/hosts', group: 'Hosts', entity: ['Host', 'Hosts'], createMany: (db, scope, bodies) => createHosts(db, scope, bodies),
});
const hostBulkCreate = { ...bulkCreate, summary: `${bulkCreate.summary}; at most ${BULK_MAX_IP_ADDRESSES} IP addresses in all (each is locked until the commit)` };

export const hostRoutes = [...hostRoutesDeclared, ...bulkRoutes(hostRoutesDeclared, {
  path: '/api/v1/hosts', group: 'Hosts', entity: ['Host', 'Hosts'],
  schemas: { list: hostListQuery, response: hostResponse },
  list: (db, scope, q) => hostService.list(db, scope, q), remove: (db, scope, id) => hostService.remove(db, scope, id),
}), hostBulkCreate];
