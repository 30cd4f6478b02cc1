import Joi from 'joi';
import { at, body, commaList, idList, uuid } from '../../http/schemas.js';
import { MAX_NODES_CAP, VIEWS } from './graph.js';
import { MAX_DIFF_CHANGES, MAX_TICKS, TIMELINE_MAX_DRAWN } from './bounds.js';

const NODE_ID = /^[a-z_]+:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const topologyQuery = Joi.object({
  network_id: uuid().required(),
  view: Joi.string().valid(...VIEWS).default('l3'),
  at: at(),
  tag_ids: idList(100),
  include_hidden: Joi.boolean().default(false),
  max_nodes: Joi.number().integer().min(1).max(MAX_NODES_CAP).default(2000),
  expand: commaList(NODE_ID, 'a container node id (<kind>:<uuid>)', 1000),
});

const node = Joi.object({
  id: Joi.string().required(), kind: Joi.string().required(), entity_id: uuid().allow(null), parent_id: Joi.string().allow(null), label: Joi.string(),
}).unknown(true).label('TopologyNode');
const edge = Joi.object({
  id: Joi.string().required(), kind: Joi.string().required(), source: Joi.string().required(), target: Joi.string().required(),
  evidence: Joi.string().valid('forwarding_table').optional().description('l2: a physical_link learned from a switch\'s forwarding table (the host sits on that port), not reported by LLDP/CDP'),
}).unknown(true).label('TopologyEdge');

export const topologyResponse = Joi.object({
  network_id: uuid(),
  view: Joi.string().valid(...VIEWS),
  as_of: Joi.string(),
  digest: Joi.string(),
  available_views: Joi.array().items(Joi.string().valid(...VIEWS)),
  nodes: Joi.array().items(node),
  edges: Joi.array().items(edge),
  layout: Joi.object({
    status: Joi.string().valid('ready', 'pending', 'failed', 'skipped'),
    positions: Joi.object().pattern(Joi.string(), Joi.object({ x: Joi.number(), y: Joi.number(), width: Joi.number(), height: Joi.number() })),
    routes: Joi.object().pattern(Joi.string(), Joi.array().items(Joi.object({ x: Joi.number(), y: Joi.number() })))
      .description("Each edge's bend points around the boxes (absolute, from its source's centre to its target's, neither included); [] when a straight line crosses no box; an edge left out is drawn straight. Made for the laid-out positions: an edge whose end is pinned elsewhere (its first bend no longer level with its source's centre, or its last with its target's) is drawn straight."),
    pinned: Joi.array().items(Joi.string()),
    error: Joi.string().optional().description('Why the layout failed (status failed)'),
  }),
  filtered_out: Joi.object({
    hidden_hosts: Joi.number().integer(), hosts_without_tag: Joi.number().integer(),
    collapsed_containers: Joi.number().integer(), collapsed_nodes: Joi.number().integer(), over_budget: Joi.number().integer(),
  }),
}).label('Topology');

export const positionsBody = body({
  network_id: uuid().required(),
  view: Joi.string().valid(...VIEWS).required(),
  positions: Joi.object().pattern(
    Joi.string().pattern(NODE_ID, '<kind>:<uuid>'),
    Joi.object({ x: Joi.number().min(-1e7).max(1e7).required(), y: Joi.number().min(-1e7).max(1e7).required() }).unknown(true),
  ).min(1).max(5000).required(),
});

export const unpinQuery = Joi.object({
  network_id: uuid().required(),
  view: Joi.string().valid(...VIEWS).required(),
  node_ids: commaList(NODE_ID, 'a node id (<kind>:<uuid>)', 5000),
});

export const pinsResponse = Joi.object({ network_id: uuid(), view: Joi.string(), pinned: Joi.array().items(Joi.string()) }).label('TopologyPins');

const filters = {
  network_id: uuid().required(),
  view: Joi.string().valid(...VIEWS).default('l3'),
  tag_ids: idList(100),
  include_hidden: Joi.boolean().default(false),
};

/** `from` strictly before `to` (400 otherwise); `to` defaults to now. */
const interval = (schema: Joi.ObjectSchema) => schema.custom((q: { from?: string; to?: string }, helpers) => {
  if (q.from && q.to && Date.parse(q.from) >= Date.parse(q.to)) return helpers.message({ custom: "'from' must be before 'to'" });
  return q;
});

export const diffQuery = interval(Joi.object({
  ...filters, from: at().description('The earlier instant (or last_changes)'), to: at(),
  last_changes: Joi.number().integer().min(1).max(10_000)
    .description('Instead of from: compare the state just before the network\'s last N change instants (up to `to`; one per write transaction) with `to`. The answer\'s `from` is that instant.'),
  max_changes: Joi.number().integer().min(1).max(MAX_DIFF_CHANGES).default(5000)
    .description(`Most nodes and most edges listed (added, then removed, then changed); \`truncated\` counts the ones left out (at most ${MAX_DIFF_CHANGES})`),
}).xor('from', 'last_changes'));
export const timelineQuery = interval(Joi.object({
  ...filters, from: at().required(), to: at(),
  // The union is shaped as the view is (its biggest containers collapsed), so a long history of a large network stays drawable.
  max_nodes: Joi.number().integer().min(1).max(MAX_NODES_CAP).default(2000),
  expand: commaList(NODE_ID, 'a container node id (<kind>:<uuid>)', 1000),
}));

export const exportQuery = Joi.object({
  ...filters,
  at: at(),
  max_nodes: Joi.number().integer().min(1).max(MAX_NODES_CAP).default(2000),
  expand: commaList(NODE_ID, 'a container node id (<kind>:<uuid>)', 1000),
  format: Joi.string().valid('svg', 'graphml', 'drawio', 'mermaid').required(),
});

const changeSet = Joi.object({ added: Joi.array(), removed: Joi.array(), changed: Joi.array() });
export const diffResponse = Joi.object({
  network_id: uuid(), view: Joi.string(), from: Joi.string(), to: Joi.string(), nodes: changeSet, edges: changeSet,
  truncated: Joi.object({ nodes: Joi.number().integer(), edges: Joi.number().integer() }).description('Changes left out by max_changes'),
}).label('TopologyDiff');
export const timelineResponse = Joi.object({
  network_id: uuid(), view: Joi.string(), from: Joi.string(), to: Joi.string(),
  ticks: Joi.array().items(Joi.string()).description(`\`from\`, then the instants to show: every change instant while there are at most ${MAX_TICKS - 1}; past that (or past the bound of ${TIMELINE_MAX_DRAWN.toLocaleString('en')} element rows drawn over all ticks, which a large view reaches sooner) the change instants grouped into buckets cut at the longest pauses (a bulk import stays one bucket), each tick being the state at the end of its bucket`),
  tick_changes: Joi.array().items(Joi.number().integer()).description('Parallel to ticks: how many change instants (one per write transaction) each tick stands for; 0 for `from`; they sum to the changes in (from, to]'),
  digest: Joi.string(), nodes: Joi.array(), edges: Joi.array(), layout: Joi.object().unknown(true), filtered_out: Joi.object().unknown(true),
}).label('TopologyTimeline');
