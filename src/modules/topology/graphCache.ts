// Drawn graphs kept by this process, so a map that is opened again, polled, or shared by several
// operators is not drawn again from the tables while nothing changed (a budgeted l3 graph of the
// bench network costs ~150 ms to draw; served from here, the whole GET ~10–20 ms: bench/README.md).
//
// When is a drawing still right? Every change of an inventory table becomes an event (triggers, in
// the writer's transaction; see the Events migration), and events are numbered in commit order by
// the sequencer. So the network's highest event id, with its organization's highest event that
// belongs to no network (tags), is a version of everything a graph is drawn from (hosts, children,
// subnets, dependencies, tags), provided no committed change is still waiting in the outbox to be
// numbered. Changes in the organization's other networks leave it as it is. The version is read BEFORE drawing: a drawing stored under
// version V can only hold changes newer than V if they committed before it was drawn, and then a
// later reader finds them numbered (> V) or still waiting (no version), never V again. While the
// outbox still holds anything the cache is bypassed, so a lagging sequencer costs speed, never freshness.
// Layouts and pins are not cached here: they are read per request (an indexed lookup).
import type { Db } from '../../core/db.js';
import { OUTBOX_PENDING_SQL, sequenceSomeIfIdle } from '../events/service.js';
import type { TopologyQuery } from './service.js';

export type CacheResult = 'hit' | 'miss' | 'bypass';

interface Entry<T> {
  version: string;
  value: T;
  weight: number;
}

/**
 * A network's change version and the database's `now` (one statement, one snapshot), or no
 * version while a committed change still waits to be numbered. Two maxima, kept as a pair (each
 * moves on its own). Pruned events do not lower them: with none left, the highest pruned id stands
 * for them.
 */
export async function changeVersion(db: Db, organizationId: string, networkId: string): Promise<{ version: string | undefined; now: string }> {
  const newest = (where: string) => `coalesce((select max(id) from events where ${where}), (select max(pruned_through) from event_retention), 0)`;
  const read = () => db.one<{ version: string; pending: boolean; now: string }>(
    `select ${newest('network_id = ? and organization_id = ?')} || ':' || ${newest('network_id is null and organization_id = ?')} as version,
            ${OUTBOX_PENDING_SQL} as pending,
            to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`,
    [networkId, organizationId, organizationId],
  );
  let row = (await read())!;
  if (row.pending) {
    // Committed changes get their numbers now (a bounded batch, never waiting for a busy
    // sequencer), so a process where no sequencer listens still finds a version.
    await sequenceSomeIfIdle(db);
    row = (await read())!;
  }
  return { version: row.pending ? undefined : row.version, now: row.now };
}

/**
 * Every field of a query, as it enters a drawing's key (lists in a canonical order): a Record over
 * the query's fields, so a field added to TopologyQuery is a compile error here until it is
 * keyed (a drawing cached without it would be served for queries that differ in it).
 */
const KEYED: { [F in keyof Required<TopologyQuery>]: (q: TopologyQuery) => unknown } = {
  network_id: (q) => q.network_id,
  view: (q) => q.view,
  at: (q) => q.at ?? null,
  tag_ids: (q) => [...(q.tag_ids ?? [])].sort(),
  include_hidden: (q) => q.include_hidden,
  max_nodes: (q) => q.max_nodes,
  expand: (q) => [...(q.expand ?? [])].sort(),
};

/**
 * A drawing's cache key: its query, and the network's last completed scan (which says the hosts
 * marked new, and writes no event when it changed nothing). The tables it is drawn from are the
 * version's (changeVersion): each declared table's changes are events.
 */
export const drawingKey = (q: TopologyQuery, lastScan: string | null) =>
  JSON.stringify([...Object.values(KEYED).map((keyed) => keyed(q)), lastScan]);

/** A least-recently-used map bounded by total weight (a graph weighs its node and edge count). */
export class GraphCache<T> {
  private entries = new Map<string, Entry<T>>();
  private weight = 0;

  constructor(private readonly maxWeight: number, private readonly observe: (result: CacheResult) => void = () => undefined) {}

  /** The value stored under `key` for this version; undefined (and counted) otherwise. */
  get(key: string, version: string | undefined): T | undefined {
    if (version === undefined) {
      this.observe('bypass');
      return undefined;
    }
    const entry = this.entries.get(key);
    if (!entry || entry.version !== version) {
      this.observe('miss');
      return undefined;
    }
    this.entries.delete(key); // most recently used goes last
    this.entries.set(key, entry);
    this.observe('hit');
    return entry.value;
  }

  set(key: string, version: string | undefined, value: T, weight: number): void {
    if (version === undefined || weight > this.maxWeight / 4) return; // one huge graph would empty the cache
    const old = this.entries.get(key);
    if (old) {
      this.weight -= old.weight;
      this.entries.delete(key);
    }
    this.entries.set(key, { version, value, weight });
    this.weight += weight;
    for (const [k, e] of this.entries) {
      if (this.weight <= this.maxWeight) break;
      this.entries.delete(k);
      this.weight -= e.weight;
    }
  }
}
