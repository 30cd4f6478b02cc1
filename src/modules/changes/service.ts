// What each Network scan changed, scan by scan: the ended sessions of a network with
// their summaries (new, gone, changed, offline and back-online hosts: sessionSummary.ts and
// presence.ts write them when the session ends), newest first, and an operator's acknowledgement.
import type { Db } from '../../core/db.js';
import { notFound } from '../../core/errors.js';
import { isoTimestamp } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { networkService } from '../networks/service.js';

interface ScanRow {
  id: string; network_id: string; daemon_id: string; daemon_name: string | null; phase: string; started_at: unknown; finished_at: unknown; created_at: unknown;
  summary: unknown; acknowledged_at: unknown; acknowledged_by: string | null;
}

const COLUMNS = `s.id, s.network_id, s.daemon_id, d.name as daemon_name, s.phase, s.started_at, s.finished_at, s.created_at, s.summary, s.acknowledged_at, s.acknowledged_by`;
/** Ended Network sessions with a summary (a session ended before summaries existed has none). */
const SCANS = `from discovery_sessions s left join daemons d on d.organization_id = ? and d.id = s.daemon_id
  where s.organization_id = ? and s.discovery_type->>'type' = 'Network' and s.summary is not null`;

const view = (r: ScanRow) => ({
  session_id: r.id, network_id: r.network_id, daemon_id: r.daemon_id, daemon_name: r.daemon_name, phase: r.phase,
  started_at: isoTimestamp(r.started_at), finished_at: isoTimestamp(r.finished_at), created_at: isoTimestamp(r.created_at),
  summary: r.summary, acknowledged_at: isoTimestamp(r.acknowledged_at), acknowledged_by: r.acknowledged_by,
});

export const changesService = {
  async list(db: Db, scope: Scope, q: { network_id?: string; unacknowledged?: boolean; limit: number; offset: number }) {
    // One network, or every network the caller may see.
    if (q.network_id) await networkService.assertFilterable(db, scope, q.network_id);
    const [networkFilter, networkParams]: [string, unknown[]] = q.network_id ? [' and s.network_id = ?', [q.network_id]]
      : scope.allNetworks ? ['', []] : [' and s.network_id = any(?::uuid[])', [[...scope.networkIds]]];
    const filter = `${SCANS}${networkFilter}${q.unacknowledged ? ' and s.acknowledged_at is null' : ''}`;
    const params = [scope.organizationId, scope.organizationId, ...networkParams];
    const [rows, count] = await Promise.all([
      db.query<ScanRow>(`select ${COLUMNS} ${filter} order by coalesce(s.finished_at, s.created_at) desc, s.id desc${q.limit ? ' limit ?' : ''} offset ?`,
        [...params, ...(q.limit ? [q.limit] : []), q.offset]),
      db.one<{ n: string }>(`select count(*) as n ${filter}`, params),
    ]);
    return Page.of(rows.map(view), Number(count!.n), q.limit, q.offset);
  },

  /** Acknowledges a scan's changes (again: the first acknowledgement stays). 404 for another network's out of scope too. */
  async acknowledge(db: Db, scope: Scope, sessionId: string) {
    const found = await db.one<{ network_id: string }>(`select s.network_id ${SCANS} and s.id = ?`, [scope.organizationId, scope.organizationId, sessionId]);
    if (!found) throw notFound('ScanChanges', sessionId);
    await networkService.assertFilterable(db, scope, found.network_id);
    await db.query(`update discovery_sessions set acknowledged_at = now(), acknowledged_by = ? where organization_id = ? and id = ? and acknowledged_at is null`,
      [scope.userId || null, scope.organizationId, sessionId]);
    const [row] = await db.query<ScanRow>(`select ${COLUMNS} ${SCANS} and s.id = ?`, [scope.organizationId, scope.organizationId, sessionId]);
    return view(row!);
  },
};
