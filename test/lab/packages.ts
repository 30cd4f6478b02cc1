/**
 * The Debian packages the discovery lab (test/lab/lab.ts) and its bench need, installed with
 * apt-get when missing (root only), as scripts/services.ts does for PostgreSQL and Redis.
 * Only Node built-ins here. nmap is for the bench only: never bundled, never needed by the agent.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const IS_ROOT = process.getuid?.() === 0;
const log = (msg: string) => console.error(`[lab packages] ${msg}`);

/** A Debian package and the file that says it is installed. */
interface Need { pkg: string; file: string }

/** What the lab itself runs: links and namespaces, the counters and the middlebox rule, sshd. */
export const LAB_PACKAGES: Need[] = [
  { pkg: 'iproute2', file: '/usr/sbin/ip' },
  { pkg: 'nftables', file: '/usr/sbin/nft' },
  { pkg: 'openssh-server', file: '/usr/sbin/sshd' },
];
/** Issue 25's L2 lab (test/lab/l2.spec.ts): snmpd with LLDP-MIB through lldpd's AgentX, snmpwalk to check it. */
export const SNMP_PACKAGES: Need[] = [
  { pkg: 'snmpd', file: '/usr/sbin/snmpd' }, { pkg: 'snmp', file: '/usr/bin/snmpwalk' }, { pkg: 'lldpd', file: '/usr/sbin/lldpd' },
];
/** The agent's install recipes: the systemd unit checked by systemd-analyze verify. */
export const SYSTEMD_PACKAGES: Need[] = [{ pkg: 'systemd', file: '/usr/bin/systemd-analyze' }];
export const BENCH_PACKAGES: Need[] = [{ pkg: 'nmap', file: '/usr/bin/nmap' }];

const missing = (needs: Need[]) => needs.filter((n) => !fs.existsSync(n.file)).map((n) => n.pkg);

// Two lab files start at once on mocha's two workers, each may install what it misses: the second
// apt-get waits for the first's dpkg lock (up to 10 minutes) instead of failing at once.
const APT_WAITS_FOR_LOCK = ['-o', 'DPkg::Lock::Timeout=600'];

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    // Debian's openssh-server postinst would start sshd on the machine: policy-rc.d is not there,
    // so keep it from starting services (RUNLEVEL=1 makes invoke-rc.d skip starting them).
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', RUNLEVEL: '1' },
  });
  if (r.error || r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.error?.message ?? `${r.stderr}${r.stdout}`.trim()}`);
}

/**
 * Installs what is missing; throws when something is missing and cannot be installed (not root,
 * no apt-get). Returns the packages it installed.
 */
export function ensurePackages(needs: Need[]): string[] {
  const absent = missing(needs);
  if (absent.length === 0) return [];
  if (!IS_ROOT || !fs.existsSync('/usr/bin/apt-get')) {
    throw new Error(`missing ${absent.join(', ')}: install (Debian: apt-get install ${absent.join(' ')}) as root`);
  }
  log(`apt-get install -y --no-install-recommends ${absent.join(' ')}`);
  try {
    run('apt-get', [...APT_WAITS_FOR_LOCK, 'install', '-y', '--no-install-recommends', ...missing(needs)]);
  } catch {
    log('apt-get update'); // the package lists may be missing or stale on a fresh machine
    run('apt-get', [...APT_WAITS_FOR_LOCK, 'update']);
    run('apt-get', [...APT_WAITS_FOR_LOCK, 'install', '-y', '--no-install-recommends', ...missing(needs)]);
  }
  const still = missing(needs);
  if (still.length) throw new Error(`apt-get install did not provide ${still.join(', ')}`);
  return absent;
}

// `node --import tsx test/lab/packages.ts [bench] [snmp]` installs ahead of time.
if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const needs = [...LAB_PACKAGES, ...(args.includes('bench') ? BENCH_PACKAGES : []), ...(args.includes('snmp') ? SNMP_PACKAGES : [])];
  console.log(ensurePackages(needs).join(' ') || 'nothing to install');
}
