// A daemon's version_status, computed on read from its version and the policy in configuration
// (decisions §7). Pure: the same inputs always give the same status, and `now` is a parameter so
// a sunset date can pass without any write (the version-status job re-evaluates periodically).
import { environment, setting, type Env } from '../../core/settings.js';

export interface VersionPolicy {
  minimumSupported: string;
  recommended: string;
  /** Optional sunset: below `floor`, Deprecated until `date` (YYYY-MM-DD), Unsupported after. */
  sunset?: { floor: string; date: string };
}

export type VersionStatusName = 'Current' | 'Outdated' | 'Deprecated' | 'Unsupported' | 'Unknown';
export type Severity = 'Info' | 'Warning' | 'Critical';

export interface VersionWarning {
  message: string;
  severity: Severity;
  sunset_date?: string;
}

export interface VersionStatus {
  status: VersionStatusName;
  version: string | null;
  has_correct_docker_volume_mount: boolean;
  supports_unified_discovery: boolean;
  sunset_date?: string;
  warnings: VersionWarning[];
}

export const DEFAULT_VERSION_POLICY: VersionPolicy = { minimumSupported: '0.12.0', recommended: '0.14.13' };

/** Parses `x.y.z` (a leading `v` and a pre-release or build suffix are tolerated); null when not semver. */
export function parseVersion(text: string | null | undefined): [number, number, number] | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(text?.trim() ?? '');
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

export function compareVersions(a: [number, number, number], b: [number, number, number]): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

const below = (v: [number, number, number], limit: string) => compareVersions(v, parseVersion(limit)!) < 0;
const atLeast = (v: [number, number, number] | null, limit: string) => v !== null && !below(v, limit);

export function versionStatus(version: string | null | undefined, policy: VersionPolicy, now: Date = new Date()): VersionStatus {
  const parsed = parseVersion(version);
  const base = {
    version: version ?? null,
    has_correct_docker_volume_mount: atLeast(parsed, '0.16.1'),
    supports_unified_discovery: atLeast(parsed, '0.15.0'),
  };
  const rec = policy.recommended;
  if (!parsed) {
    return { ...base, status: 'Unknown', warnings: [{ message: `Daemon version unknown. Update to ${rec} or later.`, severity: 'Warning' }] };
  }
  const label = `Daemon ${version}`;
  if (below(parsed, policy.minimumSupported)) {
    return { ...base, status: 'Unsupported', warnings: [{ message: `${label} is no longer supported. Update to ${rec} or later to reconnect.`, severity: 'Critical' }] };
  }
  if (policy.sunset && below(parsed, policy.sunset.floor)) {
    const date = policy.sunset.date;
    // The sunset date is the last day of support (UTC): Unsupported from the next day on.
    const passed = now.getTime() >= Date.parse(`${date}T00:00:00Z`) + 24 * 3600 * 1000;
    const message = passed
      ? `${label} is no longer supported (support ended ${date}). Update to ${rec} or later to reconnect.`
      : `${label} is deprecated and support ends ${date}. Update to ${rec} or later before then to avoid interruption.`;
    return { ...base, status: passed ? 'Unsupported' : 'Deprecated', sunset_date: date, warnings: [{ message, severity: 'Critical', sunset_date: date }] };
  }
  if (below(parsed, rec)) {
    return { ...base, status: 'Outdated', warnings: [{ message: `${label} is outdated. Update to ${rec} for the latest features.`, severity: 'Warning' }] };
  }
  return { ...base, status: 'Current', warnings: [] };
}

/** The policy from the environment: DAEMON_MIN_VERSION, DAEMON_RECOMMENDED_VERSION, DAEMON_SUNSET_FLOOR + DAEMON_SUNSET_DATE. */
export function versionPolicyFromEnv(env: Env = environment()): VersionPolicy {
  const policy: VersionPolicy = { minimumSupported: setting('DAEMON_MIN_VERSION', env), recommended: setting('DAEMON_RECOMMENDED_VERSION', env) };
  const [floor, date] = [setting('DAEMON_SUNSET_FLOOR', env), setting('DAEMON_SUNSET_DATE', env)];
  if (floor && date) policy.sunset = { floor, date };
  return policy;
}
