// A daemon as users see it (spec §2.9, reference §12), with `version_status` computed on read from
// its version and the policy in configuration (decisions §7).
import { isoTimestamp, type Row } from '../../core/historyTable.js';
import { versionPolicyFromEnv, versionStatus, type VersionPolicy } from './versionStatus.js';

let policy: VersionPolicy | undefined;

/** The version policy, read from the environment once per process. */
export function versionPolicy(): VersionPolicy {
  policy ??= versionPolicyFromEnv();
  return policy;
}

/** How often a daemon_poll daemon asks for work (its heartbeat): Scanopy's default and our agent's (--interval). */
export const DAEMON_POLL_INTERVAL_MS = 30_000;

/**
 * A daemon_poll daemon not heard from for this long is not running (it exited, as an agent run with
 * --once does, or it was stopped): four missed polls, so a slow request or two never flips it.
 * server_poll daemons have is_unreachable instead (the server's polls fail).
 */
export const DAEMON_POLL_STALE_AFTER_MS = 4 * DAEMON_POLL_INTERVAL_MS;

/** Whether a daemon_poll daemon's last contact is older than DAEMON_POLL_STALE_AFTER_MS (as of `now`). */
export function isStale(d: { mode?: unknown; last_seen?: unknown }, now = Date.now()): boolean {
  if (d.mode !== 'daemon_poll' || d.last_seen == null) return false;
  return now - Date.parse(isoTimestamp(d.last_seen)!) > DAEMON_POLL_STALE_AFTER_MS;
}

/** What this project's agent adds to the Scanopy version it speaks (agent/config.ts AGENT_VERSION: 0.14.13+netinventory-agent.…). */
export const AGENT_VERSION_MARK = '+netinventory-agent';

export interface Capabilities {
  has_docker_socket: boolean;
  interfaced_subnet_ids: string[];
}

export function daemonView(d: Row) {
  const capabilities = (d.capabilities ?? { has_docker_socket: false, interfaced_subnet_ids: [] }) as Capabilities;
  return {
    id: d.id, name: d.name, host_id: d.host_id, suggested_host_id: d.suggested_host_id ?? null, network_id: d.network_id, user_id: d.user_id, api_key_id: d.api_key_id,
    mode: d.mode, url: d.url, tags: d.tags, is_unreachable: d.is_unreachable, standby: d.standby,
    consecutive_failures: d.consecutive_failures ?? 0, last_error: d.last_error ?? null, last_error_at: isoTimestamp(d.last_error_at ?? null),
    standby_cleared_at: isoTimestamp(d.standby_cleared_at), last_seen: isoTimestamp(d.last_seen), is_stale: isStale(d), version: d.version,
    capabilities, interfaced_subnet_ids: capabilities.interfaced_subnet_ids ?? [],
    created_at: isoTimestamp(d.created_at), updated_at: isoTimestamp(d.updated_at),
    lineage_id: d.lineage_id, valid_from: isoTimestamp(d.valid_from), valid_to: isoTimestamp(d.valid_to),
    version_status: versionStatus(d.version as string | null, versionPolicy()),
  };
}

/** ServerCapabilities (reference §1.1): answered at startup and register; warnings left out when none. */
export function serverCapabilities(version: string | null | undefined) {
  const p = versionPolicy();
  const out: Record<string, unknown> = { server_version: p.recommended, minimum_daemon_version: p.minimumSupported };
  const warnings = versionStatus(version, p).warnings;
  if (version && warnings.length) out.deprecation_warnings = warnings;
  return out;
}
