// The agent's configuration: command-line flags, each also an environment variable (AGENT_<FLAG>,
// flags win). Validation is strict: a bad value is a UsageError (the CLI prints it and exits 2),
// never a guess, because a wrong target means probing something nobody asked for.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CredentialError, parseV3, type SnmpCredential } from './snmp/credentials.js';
import { isIPv4, networkAddress, parseIPv4 } from './net/ip.js';

/**
 * The version the agent announces. The protocol generation it speaks is Scanopy 0.14.13 (the server
 * skips server_poll daemons below 0.14.0 and calls anything below its own version Outdated); the
 * build metadata says which agent it is (semver build metadata: ignored in comparisons).
 */
export const AGENT_VERSION = '0.14.13+netinventory-agent.0.1.0';
export const AGENT_NAME = 'netinventory-agent';

export type AgentMode = 'daemon_poll' | 'server_poll';

export interface AgentConfig {
  server: string;
  /** The daemon API key given by configuration (--key, --key-file, AGENT_KEY, AGENT_KEY_FILE); null: paired later (server_poll). */
  key: string | null;
  /** The network the key belongs to (else asked of the server at register; remembered in the state file). */
  network: string | null;
  mode: AgentMode;
  /** server_poll: where the agent's own API listens. */
  listen: { host: string; port: number };
  /** server_poll without a key: the code POST /api/initialize must carry (null: one is made up and logged at start). */
  pairingCode: string | null;
  /** server_poll: serve the agent's API over TLS with this certificate and key (PEM files), or a self-signed pair made with openssl. */
  tls: { cert: string; key: string } | 'self-signed' | null;
  /** Said once at start (a key on the command line, a key file others can read). */
  warnings: string[];
  /** Targets given on the command line (IPv4 CIDRs, single addresses as /32). */
  targets: string[];
  once: boolean;
  statePath: string;
  name: string;
  /** Global probe budget (one for the whole run). */
  pps: number;
  sockets: number;
  /** request-work interval (the heartbeat), ms. */
  intervalMs: number;
  explain: string | null;
  /** Probe 9100–9107 (printers print what they receive): only when asked. */
  probeRawSocketPorts: boolean;
  /** The full port range is spread over this many runs (one slice per run besides the light set); 0: light set only. */
  fullRangeRuns: number;
  /** SNMP credentials tried on every live host (--snmp-community a,b; --snmp-v3 user:auth:pass:priv:pass,…), after the server's. */
  snmp: SnmpCredential[];
  /** SNMP v2c `public` on the targets' live hosts besides those (default on; --no-snmp-public: never). */
  snmpPublic: boolean;
  /** A resolver for PTR names (inside the targets or loopback); null: no PTR lookup (the system resolver is never used). */
  dns: string | null;
  /** Ask each live host for its name over unicast mDNS. */
  mdns: boolean;
  /** Docker / Podman Engine APIs to read (unix socket paths or http(s) URLs); default the usual socket when it exists. */
  docker: string[];
}

export class UsageError extends Error {}

/** Gentler than the peers (Scanopy: 500 probes/s and 200 sockets per host): one budget for the run. */
export const DEFAULT_PPS = 200;
export const DEFAULT_SOCKETS = 64;
export const DEFAULT_INTERVAL_MS = 30_000;
/** Loopback only: an agent's API is offered to the network only when --listen says where. */
export const DEFAULT_LISTEN = '127.0.0.1:60073';
/**
 * 64 runs: ~1,024 more ports per live host per run (the first run: 1–1023), a full sweep every 64
 * runs. With 1/7 per run (9,362 ports a host) a /24 with 40 live hosts took 30 min at 200 probes/s.
 */
export const DEFAULT_FULL_RANGE_RUNS = 64;

const FLAGS = {
  server: 'string', key: 'string', 'key-file': 'string', network: 'string', mode: 'string', listen: 'string', targets: 'string', once: 'boolean',
  'pairing-code': 'string', 'tls-cert': 'string', 'tls-key': 'string', 'tls-self-signed': 'boolean',
  state: 'string', name: 'string', pps: 'string', sockets: 'string', interval: 'string', explain: 'string',
  'snmp-community': 'string', 'snmp-v3': 'string', 'no-snmp-public': 'boolean', dns: 'string', mdns: 'boolean',
  'probe-raw-socket-ports': 'boolean', 'full-range-runs': 'string', docker: 'string', help: 'boolean',
} as const;
type Flag = keyof typeof FLAGS;

export const USAGE = `Usage: netinventory-agent --server <url> --key-file <file> [--network <uuid>] [--mode daemon_poll|server_poll]
       [--listen <addr:port>] [--targets <cidr,…>] [--once] [--state <file>] [--name <name>]
       [--pps N] [--sockets N] [--interval <seconds>] [--full-range-runs N] [--probe-raw-socket-ports] [--explain <address>]
       [--snmp-community <c,…>] [--snmp-v3 <user[:authproto:authpass[:privproto:privpass]],…>] [--no-snmp-public] [--dns <resolver ip[:port]>] [--mdns]
       [--docker <socket path or http(s) URL,…|none>]
       server_poll: [--pairing-code <code>] [--tls-cert <pem> --tls-key <pem> | --tls-self-signed]
The key (scp_d_…): --key-file <file> (its first line) or AGENT_KEY; --key <key> works too, but shows it in the process list.
server_poll: the agent's API listens on ${DEFAULT_LISTEN} unless --listen names an address (0.0.0.0:60073: every one).
Without a key it waits to be paired: POST /api/initialize {network_id, api_key, pairing_code} with the pairing code it
logs at start (or the one given by --pairing-code), or provision the daemon on the server with that pairing_code.
SNMP, PTR and mDNS go only to live hosts of the targets (PTR: only to the --dns resolver). SNMP tries v2c 'public' after the
given credentials unless --no-snmp-public (or the server's approval of a subnet) says not to.
Each flag is also an environment variable: AGENT_SERVER, AGENT_KEY, AGENT_KEY_FILE, AGENT_NETWORK, AGENT_MODE, AGENT_LISTEN,
AGENT_TARGETS, AGENT_ONCE=1, AGENT_STATE, AGENT_NAME, AGENT_PPS, AGENT_SOCKETS, AGENT_INTERVAL, AGENT_FULL_RANGE_RUNS,
AGENT_EXPLAIN, AGENT_DOCKER, AGENT_SNMP_COMMUNITY, AGENT_SNMP_V3, AGENT_NO_SNMP_PUBLIC=1, AGENT_DNS, AGENT_MDNS=1, AGENT_PAIRING_CODE,
AGENT_TLS_CERT, AGENT_TLS_KEY, AGENT_TLS_SELF_SIGNED=1.
The agent probes only the targets it is given (--targets, or subnets approved for it on the server).
From a checkout of the server's repository: npm run agent -- <the same flags>.`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** "a.b.c.d/len" (a single address becomes /32); refuses what is not the network address of its prefix. */
export function normaliseTarget(text: string): string {
  const [address, prefixText, ...rest] = text.trim().split('/');
  const ip = parseIPv4(address ?? '');
  const prefix = prefixText === undefined ? 32 : /^\d{1,2}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!ip || rest.length || !(prefix >= 0 && prefix <= 32)) throw new UsageError(`bad target '${text}': expected an IPv4 CIDR such as 198.18.10.0/24 or an address`);
  const network = networkAddress(ip, prefix).toString();
  if (network !== ip.toString()) {
    throw new UsageError(`bad target '${text}': not the network address of a /${prefix} (did you mean ${network}/${prefix}?)`);
  }
  // The scanner's cap (agent/scan/targets.ts): said now, as a usage error, rather than as a failed session.
  if (prefix < 16) throw new UsageError(`bad target '${text}': more than a /16 (65,536 addresses); split it or narrow it`);
  return `${address}/${prefix}`;
}

function positive(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${flag} must be a positive number, not '${text}'`);
  return n;
}

function fullRangeRuns(text: string | null): number {
  if (text === null) return DEFAULT_FULL_RANGE_RUNS;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--full-range-runs must be a whole number from 0 (light set only) to 65535, not '${text}'`);
  return n;
}

/**
 * --docker: Engine APIs (Docker's or Podman's, e.g. /run/podman/podman.sock), comma-separated: a
 * socket path (or unix://path) or an http(s) URL; "none" reads none. Unset: /var/run/docker.sock
 * when it exists. Only read: the agent never execs, creates or changes anything there.
 */
export function dockerEndpoints(text: string | null, exists: (path: string) => boolean = existsSync): string[] {
  if (text === null) return exists('/var/run/docker.sock') ? ['/var/run/docker.sock'] : [];
  if (text.trim() === 'none') return [];
  const endpoints = text.split(',').map((t) => t.trim()).filter(Boolean);
  for (const e of endpoints) {
    if (e.startsWith('/') || /^unix:\/\/\//.test(e)) continue;
    let url: URL | null = null;
    try { url = new URL(e); } catch { /* reported below */ }
    if (!url || !['http:', 'https:'].includes(url.protocol)) throw new UsageError(`--docker must be a socket path (/run/podman/podman.sock) or an http(s) URL, not '${e}'`);
  }
  return [...new Set(endpoints)];
}

function snmpCredentials(communities: string | null, v3: string | null): SnmpCredential[] {
  const list: SnmpCredential[] = (communities ?? '').split(',').filter((c) => c).map((community) => ({ version: 'v2c', community }));
  try {
    for (const user of (v3 ?? '').split(',').filter((u) => u)) list.push(parseV3(user));
  } catch (err) {
    if (err instanceof CredentialError) throw new UsageError(err.message);
    throw err;
  }
  return list;
}

/** "ip" or "ip:port": a resolver the operator names (the agent never asks the system's). */
function dnsServer(text: string | null): string | null {
  if (text === null) return null;
  const m = /^([\d.]+)(?::(\d{1,5}))?$/.exec(text);
  if (!m || !isIPv4(m[1]!) || (m[2] && Number(m[2]) > 65535)) throw new UsageError(`--dns must be an IPv4 address (optionally :port), not '${text}'`);
  return text;
}

/**
 * A pairing code as compared: capitals, without the dashes and spaces people type between groups.
 * Codes the agent makes up use PAIRING_ALPHABET (no 0/O, 1/I: nothing to misread).
 */
export const PAIRING_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';
export const normalisePairingCode = (text: string) => text.toUpperCase().replace(/[\s-]+/g, '');

function pairingCode(text: string | null): string | null {
  if (text === null) return null;
  const code = normalisePairingCode(text);
  if (!/^[A-Z0-9]{12,64}$/.test(code)) {
    throw new UsageError('--pairing-code must be 12 to 64 letters or digits (dashes and spaces are ignored); leave it out and the agent makes one up and logs it');
  }
  return code;
}

/** The first line of a key file; a file other users may read is said (not refused: secret mounts are often 0444). */
function readKeyFile(path: string, warnings: string[]): string {
  let text: string;
  let mode: number;
  try {
    text = readFileSync(path, 'utf8');
    mode = statSync(path).mode & 0o777;
  } catch (err) {
    throw new UsageError(`--key-file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (mode & 0o077) warnings.push(`key file ${path} can be read or changed by other users (mode ${mode.toString(8).padStart(4, '0')}): chmod 600 ${path}`);
  const key = text.split(/\r?\n/)[0]!.trim();
  if (!key) throw new UsageError(`--key-file ${path}: its first line is empty (expected the daemon API key, scp_d_…)`);
  return key;
}

function parseListen(text: string): { host: string; port: number } {
  const m = /^(.*):(\d{1,5})$/.exec(text);
  if (!m || Number(m[2]) > 65535) throw new UsageError(`--listen must be <address>:<port>, not '${text}'`);
  return { host: m[1]!.replace(/^\[|\]$/g, '') || '0.0.0.0', port: Number(m[2]) };
}

/** Flags first, then AGENT_* variables; throws UsageError for anything unknown or invalid. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): AgentConfig & { help: boolean } {
  const given = new Map<Flag, string | boolean>();
  const onCommandLine = new Set<Flag>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    if (!m || !(m[1]! in FLAGS)) throw new UsageError(`unknown argument '${arg}'`);
    const flag = m[1] as Flag;
    onCommandLine.add(flag);
    if (FLAGS[flag] === 'boolean') {
      given.set(flag, m[2] === undefined ? true : !['0', 'false', 'no'].includes(m[2]));
      continue;
    }
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${flag} needs a value`);
    given.set(flag, value);
  }
  for (const flag of Object.keys(FLAGS) as Flag[]) {
    const fromEnv = env[`AGENT_${flag.toUpperCase().replace(/-/g, '_')}`];
    if (given.has(flag) || fromEnv === undefined || fromEnv === '') continue;
    given.set(flag, FLAGS[flag] === 'boolean' ? !['0', 'false', 'no'].includes(fromEnv) : fromEnv);
  }
  const str = (flag: Flag) => (given.get(flag) as string | undefined) ?? null;
  const help = given.get('help') === true;
  const explain = str('explain');

  const mode = str('mode') ?? 'daemon_poll';
  if (mode !== 'daemon_poll' && mode !== 'server_poll') throw new UsageError(`--mode must be daemon_poll or server_poll, not '${mode}'`);
  const server = str('server');
  const once = given.get('once') === true;
  if (!help && !explain) {
    if (!server) throw new UsageError('--server <url> is required');
    try {
      new URL(server);
    } catch {
      throw new UsageError(`--server must be a URL such as https://inventory.example.com, not '${server}'`);
    }
  }
  const warnings: string[] = [];
  // One way to give the key; a flag wins over a variable (as for every flag), two at one level are a mistake.
  if (str('key') !== null && str('key-file') !== null && onCommandLine.has('key') === onCommandLine.has('key-file')) {
    throw new UsageError('give the key one way: --key-file <file> (or AGENT_KEY_FILE), or AGENT_KEY (or --key)');
  }
  const fromFile = str('key-file') !== null && (str('key') === null || onCommandLine.has('key-file'));
  const key = fromFile ? readKeyFile(str('key-file')!, warnings) : str('key');
  if (!fromFile && key !== null && onCommandLine.has('key')) {
    warnings.push('--key shows the key to every user of this machine (the process list): use --key-file <file> or AGENT_KEY');
  }
  // A server_poll agent may be paired later (POST /api/initialize); the others need the key now.
  if (!help && !explain && !key && (mode === 'daemon_poll' || once)) throw new UsageError('the daemon API key (scp_d_…, made on the server) is required: --key-file <file> or AGENT_KEY');
  if (key && !/^\S+$/.test(key)) throw new UsageError('the key must not contain spaces');
  const serverPollOnly = (['pairing-code', 'tls-cert', 'tls-key', 'tls-self-signed'] as const).filter((f) => given.has(f) && given.get(f) !== false);
  if (serverPollOnly.length && (mode !== 'server_poll' || once)) throw new UsageError(`--${serverPollOnly[0]} is for --mode server_poll (the agent's own API)`);
  if ((str('tls-cert') === null) !== (str('tls-key') === null)) throw new UsageError('--tls-cert and --tls-key go together (the certificate and its private key, PEM files)');
  if (str('tls-cert') !== null && given.get('tls-self-signed') === true) throw new UsageError('--tls-self-signed or --tls-cert/--tls-key, not both');
  const network = str('network');
  if (network && !UUID.test(network)) throw new UsageError(`--network must be a UUID, not '${network}'`);
  const targets = (str('targets') ?? '').split(',').filter((t) => t.trim()).map(normaliseTarget);
  if (once && !targets.length) throw new UsageError('--once needs --targets <cidr,…> (what to scan)');
  if (explain !== null && !isIPv4(explain)) throw new UsageError(`--explain needs an IPv4 address, not '${explain}'`);

  return {
    help,
    server: server ?? '',
    key,
    network: network?.toLowerCase() ?? null,
    mode,
    listen: parseListen(str('listen') ?? DEFAULT_LISTEN),
    pairingCode: pairingCode(str('pairing-code')),
    tls: str('tls-cert') !== null ? { cert: str('tls-cert')!, key: str('tls-key')! } : given.get('tls-self-signed') === true ? 'self-signed' : null,
    warnings,
    targets: [...new Set(targets)],
    once,
    statePath: str('state') ?? join(env.XDG_STATE_HOME || join(homedir(), '.local/state'), 'netinventory-agent/state.json'),
    name: str('name') ?? AGENT_NAME,
    pps: str('pps') ? positive('pps', str('pps')!) : DEFAULT_PPS,
    sockets: str('sockets') ? Math.floor(positive('sockets', str('sockets')!)) : DEFAULT_SOCKETS,
    intervalMs: str('interval') ? positive('interval', str('interval')!) * 1000 : DEFAULT_INTERVAL_MS,
    explain,
    probeRawSocketPorts: given.get('probe-raw-socket-ports') === true,
    fullRangeRuns: fullRangeRuns(str('full-range-runs')),
    snmp: snmpCredentials(str('snmp-community'), str('snmp-v3')),
    snmpPublic: given.get('no-snmp-public') !== true,
    dns: dnsServer(str('dns')),
    mdns: given.get('mdns') === true,
    docker: dockerEndpoints(str('docker')),
  };
}
