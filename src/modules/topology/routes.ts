import { defineRoutes } from '../../http/pipeline.js';
import { diffQuery, diffResponse, exportQuery, pinsResponse, positionsBody, timelineQuery, timelineResponse, topologyQuery, topologyResponse, unpinQuery } from './schemas.js';
import { MAX_TICKS } from './bounds.js';
import { pinService, topologyService, type IntervalQuery, type TopologyQuery } from './service.js';
import { EXPORT_FORMATS, type ExportFormat } from './export.js';

export const topologyRoutes = defineRoutes([
  {
    operationId: 'getTopology', method: 'get', path: '/api/v1/topology', group: 'Topology', auth: 'Viewer',
    summary: 'The network as a graph (view l3 | workloads | application | l2), now or as of `at`; large views come with their biggest containers collapsed (max_nodes, expand)',
    query: topologyQuery, response: topologyResponse,
    handler: ({ db, scope, query, services }) => topologyService.get(db, scope, query as TopologyQuery, services.queues.topologyLayout, services.topologyGraphs, services.heavyReadBudget),
  },
  {
    operationId: 'getTopologyDiff', method: 'get', path: '/api/v1/topology/diff', group: 'Topology', auth: 'Viewer',
    summary: 'What changed in a view between two instants (to: now by default; from, or last_changes: just before the last N changes): nodes and edges added, removed, changed (field by field)',
    query: diffQuery, response: diffResponse, reads: 'replica',
    handler: ({ db, scope, query, services }) => topologyService.diff(db, scope, query as Omit<IntervalQuery, 'from'> & { from?: string }, services.heavyReadBudget),
  },
  {
    operationId: 'getTopologyTimeline', method: 'get', path: '/api/v1/topology/timeline', group: 'Topology', auth: 'Viewer',
    summary: `A view over an interval: every node and edge with the intervals it existed in, the instants anything changed (ticks: at most ${MAX_TICKS}, fewer for a large view; past that the changes grouped into buckets, tick_changes counting each), one layout for all`,
    query: timelineQuery, response: timelineResponse, reads: 'replica',
    handler: ({ db, scope, query, services }) => topologyService.timeline(db, scope, query as IntervalQuery, services.queues.topologyLayout, services.heavyReadBudget),
  },
  {
    operationId: 'exportTopology', method: 'get', path: '/api/v1/topology/export', group: 'Topology', auth: 'Viewer',
    summary: 'The view as a file: SVG (standalone), GraphML (yEd, Gephi), draw.io, Mermaid; laid out as the map is',
    query: exportQuery, produces: Object.values(EXPORT_FORMATS).map((f) => f.type),
    handler: ({ db, scope, query, services }) => topologyService.export(db, scope, query as TopologyQuery & { format: ExportFormat }, services.heavyReadBudget),
  },
  {
    operationId: 'pinTopologyPositions', method: 'put', path: '/api/v1/topology/positions', group: 'Topology', auth: 'Member',
    summary: 'Pin nodes of a view where a user dragged them: every later layout answer keeps them there',
    body: positionsBody, response: pinsResponse,
    handler: ({ db, scope, body }) => pinService.pin(db, scope, body),
  },
  {
    operationId: 'unpinTopologyPositions', method: 'delete', path: '/api/v1/topology/positions', group: 'Topology', auth: 'Member',
    summary: 'Unpin the listed nodes (node_ids), or every node of the view',
    query: unpinQuery, response: pinsResponse,
    handler: ({ db, scope, query }) => pinService.unpin(db, scope, query as { network_id: string; view: 'l3'; node_ids?: string[] }),
  },
]);
