import { defineRoutes } from '../../http/pipeline.js';
import { pinsResponse, positionsBody, topologyQuery, topologyResponse, unpinQuery } from './schemas.js';
import { pinService, topologyService, type TopologyQuery } from './service.js';

export const topologyRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/topology', group: 'Topology', auth: 'Viewer',
    summary: 'The network as a graph (view l3 | workloads | application | l2), now or as of `at`; large views come with their biggest containers collapsed (max_nodes, expand)',
    query: topologyQuery, response: topologyResponse,
    handler: ({ db, scope, query, services }) => topologyService.get(db, scope, query as TopologyQuery, services.queues.topologyLayout),
  },
  {
    method: 'put', path: '/api/v1/topology/positions', group: 'Topology', auth: 'Member',
    summary: 'Pin nodes of a view where a user dragged them: every later layout answer keeps them there',
    body: positionsBody, response: pinsResponse,
    handler: ({ db, scope, body }) => pinService.pin(db, scope, body),
  },
  {
    method: 'delete', path: '/api/v1/topology/positions', group: 'Topology', auth: 'Member',
    summary: 'Unpin the listed nodes (node_ids), or every node of the view',
    query: unpinQuery, response: pinsResponse,
    handler: ({ db, scope, query }) => pinService.unpin(db, scope, query as { network_id: string; view: 'l3'; node_ids?: string[] }),
  },
]);
