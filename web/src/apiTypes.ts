// The API's shapes, from the generated client's types (clients/typescript/schema.d.ts, made by
// `npm run client` from the OpenAPI document): type-only, so esbuild erases them and the bundle does
// not grow. Where the document is looser than what the API sends (a topology node is "id, kind,
// label and anything else", a diff's items `unknown`), the fields the map reads are added here, once.
import type { components } from '../../clients/typescript/schema.js';

type Schemas = components['schemas'];

export type User = Schemas['User'];
/** The signed-in user (/api/auth/me): with whether the queue dashboard is theirs to open. */
export type CurrentUser = Schemas['CurrentUser'];
export type Network = Schemas['Network'];
export type NetworkContents = Schemas['NetworkContents'];
export type Webhook = Schemas['Webhook'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type AlertRule = Schemas['AlertRule'];
export type Tag = Schemas['Tag'];
export type Host = Schemas['Host'];
export type HostCsvImport = Schemas['HostCsvImport'];
export type HostHistoryState = Schemas['HostHistoryState'];
export type HostChange = Schemas['HostChange'];
export type Daemon = Schemas['Daemon'];
export type UserApiKey = Schemas['UserApiKey'];
export type UserApiKeyCreated = Schemas['UserApiKeyCreated'];
export type VersionWarning = Schemas['VersionStatus']['warnings'][number];
export type DaemonTargets = Schemas['DaemonTargets'];
export type DaemonApprovedTarget = Schemas['DaemonApprovedTarget'];
export type ScanChanges = Schemas['ScanChanges'];
export type DiscoverySession = Schemas['DiscoverySession'];
export type DiscoveryReport = NonNullable<Schemas['DiscoveryReport']>;
export type DiscoverySessionSummary = NonNullable<Schemas['DiscoverySessionSummary']>;
export type DaemonApiKeyCreated = Schemas['DaemonApiKeyCreated'];
export type AgentDownloads = Schemas['AgentDownloads'];

/** When a timeline's node or edge existed (to: null, still there). */
export interface Interval { from: string; to: string | null }

export type GraphNode = Schemas['TopologyNode'] & {
  host_id?: string; host_name?: string; hostname?: string; ip_address?: string; intervals?: Interval[];
  /** An address of one container: the container's service name (l3). */
  workload?: string;
  services?: Array<{ id: string; name: string; service_definition?: string; ports?: Array<{ number: number; protocol: string }>; offline?: boolean }>;
  counts?: Record<string, number>; collapsed_kind?: string; color?: string; host_kind?: string; cidr?: string;
  /** A host completed scans no longer see (hosts.offline_at), or an address or service no longer seen on one that is. */
  offline?: boolean;
  /** A host the network's last completed scan found new. */
  new?: boolean;
  /** A summary node's folded hosts (quiet hosts of a subnet: l3, workloads). */
  hosts?: Array<{ id: string; name: string; hostname?: string | null; ip_address: string }>;
  /** A summary card's (src/modules/topology/card.ts): its hosts by kind, how many offline and new, its subnet. */
  host_kinds?: Record<string, number>; offline_count?: number; new_count?: number; subnet_name?: string;
  /** An interface's (l2). */
  oper_status?: string;
};
export type GraphEdge = Schemas['TopologyEdge'] & { color?: string; edge_style?: string; label?: string; dependency_id?: string; intervals?: Interval[] };

export type Layout = Schemas['Topology']['layout'];
export type Box = Layout['positions'][string];

/**
 * What the map draws: the graph as of an instant (Topology: as_of, available_views) or a timeline's
 * union of instants (TopologyTimeline: ticks).
 */
export type Topology = Omit<Schemas['Topology'], 'nodes' | 'edges' | 'as_of' | 'available_views' | 'filtered_out'>
  & Partial<Pick<Schemas['Topology'], 'as_of' | 'available_views' | 'filtered_out'>>
  & { nodes: GraphNode[]; edges: GraphEdge[]; ticks?: string[] };

export interface ItemChange { id: string; kind: string; changes: Record<string, [unknown, unknown]> }
/** What the map reads of a diff (its network and view are the map's own). */
export type TopologyDiff = Pick<Schemas['TopologyDiff'], 'from' | 'to'> & Partial<Pick<Schemas['TopologyDiff'], 'truncated'>> & {
  nodes: { added: GraphNode[]; removed: GraphNode[]; changed: ItemChange[] };
  edges: { added: GraphEdge[]; removed: GraphEdge[]; changed: ItemChange[] };
};
