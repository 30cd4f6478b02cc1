// Discovery ingestion: what daemons report (subnets, hosts with their children, session progress)
// merged into the inventory. One module for the synchronous daemon endpoints and the background
// jobs alike. Input and output are in the daemon's vocabulary (./vocabulary.ts translates). Hosts,
// the bulk of it, are ingested a batch at a time by ./hostIngest.ts.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError } from '../../core/errors.js';
import { maskSecrets } from '../../core/secretFields.js';
import type { Scope } from '../../core/scope.js';
import { subnetTable } from '../subnets/table.js';
import { assertOwnNetwork, idsOfOtherOrganizations, json, LOCKS, NIL, type IngestContext } from './hostIngest.js';
import { newSource } from './plan.js';
import { TERMINAL_PHASES } from './schemas.js';
import { markPresence } from './presence.js';
import { evaluateSessionAlerts } from '../alerts/evaluate.js';
import { scannedSubnetIds, summarizeSession } from './sessionSummary.js';
import { subnetToDaemon, type DaemonSource, type DaemonSubnet } from './vocabulary.js';

export { assertOwnNetwork, ingestHost, ingestHosts, type IngestContext } from './hostIngest.js';

/** The context of a daemon's request: its key's one network, its X-Daemon-ID. */
export function daemonContext(scope: Scope, discoveryId?: string): IngestContext {
  const [networkId] = scope.networkIds;
  return { organizationId: scope.organizationId, networkId: networkId!, daemonId: scope.daemonId!, discoveryId };
}

// ---- Subnets -------------------------------------------------------------------------------------

/** Docker's default bridge repeats on every Docker host: such subnets of different hosts stay apart (reference §2.1). */
function dockerHostOf(source: DaemonSource | undefined, subnetType: string): string | null | undefined {
  if (subnetType !== 'DockerBridge') return undefined;
  const metadata = (source?.metadata ?? []) as Array<{ type?: string; host_id?: string }>;
  if (!metadata.length || metadata.some((m) => m.type !== 'Docker')) return undefined;
  return metadata[0]!.host_id ?? null;
}

/**
 * A reported subnet: one of the network with the same CIDR (or the same id) is the one, returned
 * unchanged; else it is created with the reported id (a nil id, or one used in another network or
 * organization, gets a fresh one, so nothing tells that it exists there).
 */
export async function ingestSubnet(db: Db, ctx: IngestContext, subnet: DaemonSubnet) {
  assertOwnNetwork(ctx, subnet.network_id);
  return db.transaction(async (tx) => {
    await tx.query(LOCKS(`select ?::text as k`), [`subnet:${ctx.networkId}:${subnet.cidr}`]);
    const rows = await tx.query(
      `select ${subnetTable.spec.columns.join(', ')}, null::timestamptz as valid_to from subnets
       where organization_id = ? and network_id = ? and (cidr = ?::cidr or id = ?) order by (id = ?) desc, created_at, id`,
      [ctx.organizationId, ctx.networkId, subnet.cidr, subnet.id, subnet.id],
    );
    const docker = dockerHostOf(subnet.source, subnet.subnet_type);
    const same = rows.find((r) => {
      if (r.id === subnet.id || docker === undefined) return true;
      const storedDocker = dockerHostOf(r.source as DaemonSource, String(r.subnet_type));
      return storedDocker === undefined || storedDocker === docker;
    });
    if (same) return subnetToDaemon(subnetTable.toResponse(same));

    const facts = await tx.one<{ taken: boolean; lineage_id: string | null }>(
      `select exists (select 1 from subnets_history where organization_id = ? and id = ? and network_id <> ?) as taken,
              (select lineage_id from subnets_history where organization_id = ? and network_id = ? and (id = ? or cidr = ?::cidr)
               order by (id = ?) desc, valid_from desc limit 1) as lineage_id`,
      [ctx.organizationId, subnet.id, ctx.networkId, ctx.organizationId, ctx.networkId, subnet.id, subnet.cidr, subnet.id],
    );
    // Another organization's id (a statement of its own: the one that reads every organization's partition).
    const theirs = await idsOfOtherOrganizations(tx, ctx, [{ h: 0, kind: 'subnet', id: subnet.id }]);
    const row = await subnetTable.insert(tx, {
      id: facts!.taken || theirs.length || subnet.id === NIL ? randomUUID() : subnet.id,
      organization_id: ctx.organizationId, network_id: ctx.networkId, cidr: subnet.cidr, name: subnet.name, description: subnet.description,
      subnet_type: subnet.subnet_type, source: newSource(subnet.source), tags: [], lineage_id: facts!.lineage_id,
    });
    return subnetToDaemon(row);
  });
}

// ---- Discovery sessions --------------------------------------------------------------------------

export interface DiscoveryUpdatePayload {
  session_id: string;
  daemon_id: string;
  network_id: string;
  phase: string;
  discovery_type: Record<string, unknown>;
  progress: number;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
  /** Our agent's report of the run (schemas.ts sessionReport); null from Scanopy daemons. */
  report?: Record<string, unknown> | null;
}

/**
 * A session's progress as the daemon reports it (reference §3.3): the stored state is replaced (a
 * run's report stays until a later update brings another); an unknown session is created from the
 * report (resilience), for a daemon of the context's network.
 * A finished session stays finished, and another daemon's or organization's session is never
 * touched (the report is dropped: daemons ignore the answer of these calls anyway).
 * The update that ends a Network session also computes its summary (./sessionSummary.ts), in the
 * same transaction: the daemon reported its hosts before it said the session ended.
 */
export async function applySessionUpdate(db: Db, ctx: IngestContext, payload: DiscoveryUpdatePayload): Promise<void> {
  assertOwnNetwork(ctx, payload.network_id);
  if (payload.daemon_id !== ctx.daemonId) throw new AppError('daemon_identity_mismatch', { daemon_id: payload.daemon_id });
  await db.transaction(async (tx) => {
    const [applied] = await tx.query<{ phase: string }>(
      `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase, progress, error, started_at, finished_at, report)
       select ?, d.organization_id, d.network_id, d.id, ?::jsonb, ?, ?, ?, ?, ?, ?::jsonb from daemons d
       where d.id = ? and d.organization_id = ? and d.network_id = ?
       on conflict (id, organization_id) do update set phase = excluded.phase, progress = excluded.progress, error = excluded.error,
         started_at = coalesce(excluded.started_at, discovery_sessions.started_at), finished_at = excluded.finished_at,
         report = coalesce(excluded.report, discovery_sessions.report), updated_at = now()
       where discovery_sessions.daemon_id = excluded.daemon_id and not (discovery_sessions.phase = any(?::text[]))
       returning phase`,
      [
        payload.session_id, json(maskSecrets(payload.discovery_type)), payload.phase, payload.progress, payload.error, payload.started_at, payload.finished_at,
        payload.report ? json(payload.report) : null, ctx.daemonId, ctx.organizationId, ctx.networkId, TERMINAL_PHASES,
      ],
    );
    // A row comes back only when this update was applied: a terminal phase then is the session's end.
    if (applied && TERMINAL_PHASES.includes(applied.phase)) {
      await summarizeSession(tx, ctx.organizationId, payload.session_id, scannedSubnetIds(payload.discovery_type));
      await markPresence(tx, ctx.organizationId, payload.session_id);
      // What the session changed, as the network's alert rules want it: one digest.
      await evaluateSessionAlerts(tx, ctx.organizationId, payload.session_id);
    }
  });
}
