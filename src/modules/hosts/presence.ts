// Whether a host is there, as the API shows it: derived from what discovery recorded
// (offline_at, src/modules/discovery/presence.ts), what a person said (ignored), and the
// network's expiry. Pure: the hosts list's status filter is its SQL twin (statusClause), and a test
// compares the two.
export const HOST_STATUSES = ['online', 'offline', 'stale', 'ignored'] as const;
export type HostStatus = (typeof HOST_STATUSES)[number];

export const DEFAULT_HOST_EXPIRY_DAYS = 30;
const DAY_MS = 86_400_000;

/**
 * ignored: a person said so (whatever discovery sees); online: no completed scan of its subnet
 * missed it since it was last seen (a host no scan ever covered counts as online); offline since a
 * scan missed it; stale once offline for longer than the network's expiry.
 */
export function hostStatus(host: { offline_at?: unknown; ignored?: unknown }, expiryDays: number, now: Date): HostStatus {
  if (host.ignored === true) return 'ignored';
  if (host.offline_at == null) return 'online';
  const since = host.offline_at instanceof Date ? host.offline_at : new Date(String(host.offline_at));
  return now.getTime() - since.getTime() > expiryDays * DAY_MS ? 'stale' : 'offline';
}

/**
 * The same as SQL over a hosts row `t` (the list's `status` filter), at instant `now` (a bound
 * parameter): the network's expiry read from its row.
 */
export function statusClause(status: HostStatus, now: string, organizationId: string): [string, unknown[]] {
  // The organization bound, not joined: a partitioned networks table is then read in one partition.
  const expired = `t.offline_at < ?::timestamptz - make_interval(days => coalesce((select n.host_expiry_days from networks n
    where n.organization_id = ? and n.id = t.network_id), ${DEFAULT_HOST_EXPIRY_DAYS}))`;
  switch (status) {
    case 'ignored': return ['t.ignored', []];
    case 'online': return ['not t.ignored and t.offline_at is null', []];
    case 'offline': return [`not t.ignored and t.offline_at is not null and not (${expired})`, [now, organizationId]];
    case 'stale': return [`not t.ignored and ${expired}`, [now, organizationId]];
  }
}
