import { defineRoutes } from '../../http/pipeline.js';
import { topologyQuery, topologyResponse } from './schemas.js';
import { topologyService, type TopologyQuery } from './service.js';

export const topologyRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/topology', group: 'Topology', auth: 'Viewer',
    summary: 'The network as a graph (view l3 | workloads | application | l2), now or as of `at`; large views come with their biggest containers collapsed (max_nodes, expand)',
    query: topologyQuery, response: topologyResponse,
    handler: ({ db, scope, query }) => topologyService.get(db, scope, query as TopologyQuery),
  },
]);
