// The hard bounds of topology reads (no request may hold the server), in one place that
// the schemas (which document them) and the service (which applies them) both import. The node
// cap of a drawing is graph.ts's MAX_NODES_CAP, next to the collapsing that applies it.

/** A timeline draws at most MAX_TICKS instants (each a full drawing of the view)... */
export const MAX_TICKS = 200;
/** ...and at most this many element rows (hosts, addresses, services, interfaces) over all its instants. */
export const TIMELINE_MAX_DRAWN = 1_000_000;
/** The most changes a diff lists per part (nodes, edges), whatever max_changes asks. */
export const MAX_DIFF_CHANGES = 20_000;
