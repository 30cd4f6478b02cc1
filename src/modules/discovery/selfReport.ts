// A daemon's own host. Register gives a new daemon a placeholder host (reference §1.1 step 2) and
// hands it out in the SelfReport work; a daemon whose self-report names another host (our agent
// keeps one identity per machine across reinstalls, from /etc/machine-id; any daemon whose
// addresses match a stored host) would leave that placeholder empty beside its real host. So the
// daemon adopts the host its self-report resolved to, and an untouched placeholder is deleted; a host
// a person created is never adopted (its daemon keeps its own host and names it in suggested_host_id).
import type { Db } from '../../core/db.js';
import type { DaemonHostRequest } from './vocabulary.js';

/** Sources of hosts discovery created: the only ones a self-report adopts. */
const DISCOVERED = new Set(['Discovery', 'DiscoveryWithMatch']);

/** The host a SelfReport request says the daemon was given (its metadata's host_id), if it is one. */
function placeholderOf(request: DaemonHostRequest): string | undefined {
  const [latest] = (request.host.source?.metadata ?? []) as Array<{ type?: string; host_id?: string }>;
  return latest?.type === 'SelfReport' && typeof latest.host_id === 'string' ? latest.host_id : undefined;
}

/**
 * After a batch: for each self-report whose host is not the daemon's current host, the daemon points
 * at the reported host, and its old host is deleted when nothing was ever added to it (no address,
 * port, service or interface, still the empty discovery source register gave it, no other daemon on it).
 */
export async function adoptSelfReportedHosts(
  db: Db, ctx: { organizationId: string; daemonId: string }, pairs: Array<{ request: DaemonHostRequest; hostId: string }>,
): Promise<void> {
  for (const { request, hostId } of pairs) {
    const placeholder = placeholderOf(request);
    if (!placeholder || placeholder === hostId) continue;
    // Only a host discovery created is adopted. A person's host (Manual: created through the API, an
    // import) that the report matched by address and MAC is suggested instead, for a person to judge.
    const [target] = await db.query<{ type: string | null }>(
      `select source->>'type' as type from hosts where id = ? and organization_id = ?`, [hostId, ctx.organizationId]);
    if (!DISCOVERED.has(target?.type ?? '')) {
      await db.query(
        `update daemons set suggested_host_id = ? where id = ? and organization_id = ? and suggested_host_id is distinct from ?`,
        [hostId, ctx.daemonId, ctx.organizationId, hostId],
      );
      continue;
    }
    const moved = await db.query(
      `update daemons set host_id = ?, suggested_host_id = null where id = ? and organization_id = ? and host_id = ? returning id`,
      [hostId, ctx.daemonId, ctx.organizationId, placeholder],
    );
    if (!moved.length) continue;
    await deleteUntouchedPlaceholder(db, ctx.organizationId, placeholder);
  }
}

/**
 * Deletes a daemon's old host when nothing was ever added to it (no address, port, service or
 * interface, still the empty discovery source register gave it, no daemon on it) and nobody changed
 * it (no past state in its history: not renamed, described, hidden or tagged); otherwise keeps it.
 */
export async function deleteUntouchedPlaceholder(db: Db, organizationId: string, placeholder: string): Promise<void> {
  await db.query(
    `delete from hosts h where h.id = ? and h.organization_id = ?
       and h.source = '{"type":"Discovery","metadata":[]}'::jsonb
       and not exists (select 1 from ip_addresses where organization_id = ? and host_id = h.id)
       and not exists (select 1 from ports where organization_id = ? and host_id = h.id)
       and not exists (select 1 from services where organization_id = ? and host_id = h.id)
       and not exists (select 1 from interfaces where organization_id = ? and host_id = h.id)
       and not exists (select 1 from daemons where organization_id = ? and host_id = h.id)
       and not exists (select 1 from hosts_history where organization_id = ? and id = h.id and valid_to is not null)`,
    [placeholder, ...new Array(7).fill(organizationId)],
  );
}
