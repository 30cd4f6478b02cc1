// Statistics that keep up with a large first discovery. Ingest's probes (step 3 of ./hostIngest.ts:
// a reported id's deleted host, whether a reported child id is taken, a found-again address by
// subnet+IP or MAC) look one id, address or MAC up in the history tables. When the statistics were taken before the network had rows there (a new
// network; a table analyzed while nearly empty), the planner expects about one row for the whole
// network or organization, so the GiST (network_id | organization_id, valid range) index looks as
// good as the B-tree that finds the one row, and each probe then reads every state of the network:
// ingest slowed from 143 to 23 hosts/s over 21,000 hosts (bench/scaleOut.ts, run A). No index or
// statement shape avoids it while the planner believes one row (both paths cost the same then), and
// autovacuum waits for 10 % of the table to change (never analyzes a partitioned parent at all).
// So a batch that writes many new rows of the network checks the planner's estimate for the network
// (EXPLAIN, no timing involved) and, when the statistics have not seen even this batch, analyzes the
// table (its organization's partition on the partitioned schema). Measured in bench/ingestGrowth.ts.
// The same holds for the unchanged-host lookup (touchUnchanged: hosts joined to
// host_discovery_digests by the batch's digests): autovacuum analyzes those live tables, but only
// once a minute at best, and a first discovery outgrows that. Believing the organization has one
// host, the planner looped over every host of it and, per host, read the network's digests through
// a bitmap: 2.5-3.9 s per batch at 10,000 hosts (bench/ingestGrowth.ts, round 5). The digest
// triggers' deletes (a new binding forgets its host's digest) also scanned every digest of the
// organization per row on the partitioned schema, the cached generic plan's hash join.
// So hosts and host_discovery_digests are followed too, counted by the batch's new hosts.
import type { Db } from '../../core/db.js';
import type { IngestContext } from './hostIngest.js';

/** Fewer new rows than this (since the last check, over any number of batches) never trigger an analyze or a question to the planner. */
export const ANALYZE_MIN_NEW_ROWS = 50;

/**
 * The tables whose estimate for the network ingest's plans depend on: the history tables it probes by
 * id, address or MAC (their GiST indexes compete for the probes), and those the unchanged-host lookup joins.
 */
export type FollowedTable =
  | 'hosts_history' | 'ip_addresses_history' | 'ports_history' | 'services_history' | 'bindings_history'
  | 'hosts' | 'host_discovery_digests';

/**
 * New rows per network written by this process since its last analyze of them: a network still too
 * small to show in a large table's sample is analyzed again only once its rows doubled.
 */
const sinceAnalyze = new Map<string, { rows: number; atLastAnalyze: number }>();

/** The planner's estimate of the network's rows in `table` (one partition's on the partitioned schema). */
async function estimatedRows(db: Db, ctx: IngestContext, table: FollowedTable): Promise<number> {
  const [row] = await db.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
    `explain (format json) select 1 from ${table} where organization_id = ? and network_id = ?`, [ctx.organizationId, ctx.networkId],
  );
  return row!['QUERY PLAN'][0]!.Plan['Plan Rows'];
}

/**
 * After a batch wrote `written` new rows of the network to each table: the table analyzed (skipped
 * if another session holds it) when the planner does not know of even these rows. Runs in the
 * batch's transaction, which sees its own rows; the analyze's lock (it conflicts with another
 * analyze or a vacuum of the table, not with reads or writes) is held until the batch commits.
 */
export async function followNetworkGrowth(db: Db, ctx: IngestContext, written: Record<FollowedTable, number>): Promise<void> {
  for (const [table, rows] of Object.entries(written) as Array<[FollowedTable, number]>) {
    if (!rows) continue;
    // Counted across batches: a daemon that posts one host at a time fills a network as surely as a
    // batch of a hundred does (one host per transaction, never analyzed, grew from 13 to 74 ms of
    // PostgreSQL a host between 200 and 1,000 hosts: bench/README.md, quiet re-run of 2026-12-02).
    const key = `${table}:${ctx.networkId}`;
    const growth = sinceAnalyze.get(key) ?? { rows: 0, atLastAnalyze: 0 };
    growth.rows += rows;
    sinceAnalyze.set(key, growth);
    if (growth.rows < Math.max(ANALYZE_MIN_NEW_ROWS, growth.atLastAnalyze)) continue;
    const estimate = await estimatedRows(db, ctx, table);
    if (estimate >= growth.rows) {
      // The planner already knows of them: asked again once the network has grown as much again.
      sinceAnalyze.set(key, { rows: 0, atLastAnalyze: estimate });
      continue;
    }
    // The organization's partition (the table itself on the plain schema): what pruned plans read.
    const leaf = await db.one<{ name: string }>(`select tableoid::regclass::text as name from ${table} where organization_id = ? limit 1`, [ctx.organizationId]);
    if (!leaf) continue;
    await db.query(`analyze (skip_locked) ${leaf.name}`);
    sinceAnalyze.set(key, { rows: 0, atLastAnalyze: growth.rows });
  }
}
