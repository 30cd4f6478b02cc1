import { resourceRoutes } from '../../http/resourceRoutes.js';
import { idParams } from '../../http/schemas.js';
import type { RouteDef } from '../../http/pipeline.js';
import { networkContentsResponse, networkDeleteQuery, networkListQuery, networkResponse, networkRestoreQuery, networkRestoreResponse, networkWrite } from './schemas.js';
import { networkService, networkTable } from './service.js';

export const networkRoutes: RouteDef[] = [
  ...resourceRoutes({
    path: '/api/v1/networks', group: 'Networks', entity: ['Network', 'Networks'], noun: 'a network', service: networkService, writeRole: 'Admin', organizationWide: true,
    lock: (db, scope, id) => networkTable.get(db, scope, id, undefined, true),
    schemas: { list: networkListQuery, create: networkWrite, update: networkWrite, response: networkResponse },
    extend: {
      list: { summary: 'List the networks the caller may see' },
      remove: {
        summary: 'Delete a network: refused while it holds anything (409 network_not_empty with the counts) unless cascade=true',
        query: networkDeleteQuery,
        handler: ({ db, scope, params, query }) => networkService.remove(db, scope, params.id, query.cascade),
      },
    },
  }),
  {
    operationId: 'getNetworkContents', method: 'get', path: '/api/v1/networks/:id/contents', group: 'Networks', auth: 'Viewer',
    summary: 'What a network holds now: hosts, their services, subnets, dependencies, daemons and daemon keys (what deleting it with cascade=true takes)',
    params: idParams, response: networkContentsResponse,
    handler: ({ db, scope, params }) => networkService.contents(db, scope, params.id),
  },
  {
    operationId: 'restoreNetwork', method: 'post', path: '/api/v1/networks/:id/restore', group: 'Networks', auth: 'Admin', organizationWide: true,
    summary: 'Bring a deleted network and everything it held at `at` back from history (not its daemons or their keys)',
    params: idParams, query: networkRestoreQuery, response: networkRestoreResponse,
    handler: ({ db, scope, params, query }) => networkService.restore(db, scope, params.id, query.at),
  },
];
