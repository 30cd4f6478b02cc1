// The scanner: the addresses of the given targets (and nothing else), liveness, ports and
// fingerprints within one global budget. Addresses go in chunks: liveness connects for the chunk,
// one read of the kernel's neighbour table (now filled by the kernel's ARP for those connects),
// then the ports and fingerprints of the live ones, a few hosts at a time so each is reported as
// soon as it is done.
import { identifyWithCustom } from '../fingerprint/custom.js';
import { mdnsName, ptrResolver, type MdnsOptions } from '../names.js';
import { collectSnmp } from '../snmp/collect.js';
import { credentialsFor, type SnmpCredential } from '../snmp/credentials.js';
import type { SnmpLimits } from '../snmp/session.js';
import { ouiTable, vendorOf } from '../vendors.js';
import type { ProbeTimeouts } from '../fingerprint/probes.js';
import { allowProbeListeners, ProbeBudget, type Clock } from './budget.js';
import { LIVENESS_PORTS, sweepPorts } from './liveness.js';
import { findMiddleboxes, isValidated } from './middlebox.js';
import { isOnLink, isRandomMac, onLinkNetworks, readNeighbours } from './neighbours.js';
import { isRawSocketPort, portsToProbe } from './ports.js';
import { expandTargets, type ParsedCidr } from './targets.js';
import type { Evidence, FoundHost, FoundService, ScanNetwork, ScanOptions, ScanReport, ScanTarget } from './types.js';

/** Knobs tests and the bench may turn; the defaults are the agent's. */
export interface ScanTuning {
  probeTimeouts?: ProbeTimeouts;
  clock?: Clock;
  /** Addresses per liveness chunk: the neighbour table keeps ~1,024 entries (gc_thresh3), so well under. */
  chunkSize?: number;
  /** Hosts whose ports are probed at once (the budget still bounds sockets and rate). */
  hostsAtOnce?: number;
  /** The base port set instead of the light set (a test's small list). */
  ports?: readonly number[];
  onLink?: ParsedCidr[];
  readNeighbours?: () => Promise<Map<string, string>>;
  /** The TCP connect sweep (tests replace it to check the plan without a packet). */
  sweep?: typeof sweepPorts;
  /**
   * A host's name (e.g. a PTR lookup against a resolver the operator chose). None by default: the
   * system resolver may sit outside the targets, and nothing but the targets is ever sent to.
   */
  reverseDns?: (ip: string) => Promise<string | null>;
  /** SNMP port, timeouts and walk caps (tests: a loopback port, short caps). */
  snmpLimits?: Partial<SnmpLimits>;
  /** mDNS port and window (tests: a loopback port). */
  mdns?: MdnsOptions;
}

export const scanNetwork: ScanNetwork = (options) => runScan(options);

export async function runScan(options: ScanOptions, tuning: ScanTuning = {}): Promise<ScanReport> {
  const expanded = expandTargets(options.targets); // refuses a bad target before any probe
  const budget = new ProbeBudget(options.budget, tuning.clock);
  const signal = options.signal;
  allowProbeListeners(signal);
  const onLink = tuning.onLink ?? onLinkNetworks();
  const neighbours = tuning.readNeighbours ?? readNeighbours;
  const chunkSize = tuning.chunkSize ?? 256;
  const sweep = tuning.sweep ?? sweepPorts;
  const report: ScanReport = { addressesTried: 0, aliveByEvidence: {}, hosts: [], warnings: [], probesSent: 0, cancelled: false, incomplete: [] };
  if (!tuning.reverseDns && options.dnsServer) tuning = { ...tuning, reverseDns: ptrResolver({ server: options.dnsServer }) };

  const total = expanded.reduce((n, t) => n + t.addresses.length, 0);
  let done = 0;
  let shown = -1;
  const progress = () => {
    const percent = total ? Math.floor((done * 100) / total) : 100;
    if (percent > shown) (shown = percent), options.onProgress?.(percent);
  };
  const record = async (host: FoundHost) => {
    report.hosts.push(host);
    report.incomplete!.push(...(host.snmp?.incomplete ?? []));
    for (const kind of new Set(host.evidence.map((e) => e.kind))) report.aliveByEvidence[kind] = (report.aliveByEvidence[kind] ?? 0) + 1;
    await options.onHost?.(host);
  };

  progress();
  try {
    for (const { target, addresses } of expanded) {
      const answering: FoundHost[] = [];
      const held: FoundHost[] = []; // not validated (no MAC, no protocol answer): possible phantoms, judged once the whole target is seen
      for (let i = 0; i < addresses.length; i += chunkSize) {
        const chunk = addresses.slice(i, i + chunkSize);
        report.addressesTried += chunk.length;
        const liveness = await Promise.all(chunk.map((ip) => sweep(ip, LIVENESS_PORTS, budget, signal)));
        const macs = chunk.some((ip) => isOnLink(ip, onLink)) ? await neighbours() : new Map<string, string>();
        await eachAtOnce(chunk.map((ip, n) => ({ ip, alive: liveness[n] })), tuning.hostsAtOnce ?? 16, async ({ ip, alive }) => {
          const mac = isOnLink(ip, onLink) ? macs.get(ip) ?? null : null;
          const evidence: Evidence[] = [...alive.evidence, ...(mac ? [{ kind: 'neighbour' as const, mac }] : [])];
          if (evidence.length || target.assumeUp || isDevice(target)) {
            const host = await probeHost(ip, mac, evidence, alive.open, target, options, budget, signal, tuning);
            if (host) {
              answering.push(host);
              if (isValidated(host)) await record(await addSlice(host, options, budget, signal, tuning));
              else held.push(host);
            }
          }
          done++;
          progress();
        });
      }
      const verdict = findMiddleboxes(target.cidr, answering, addresses.length);
      report.warnings.push(...verdict.warnings);
      for (const host of held) if (!verdict.phantoms.has(host.ip)) await record(await addSlice(host, options, budget, signal, tuning));
    }
    await recordFromArp(report, expanded, record);
  } catch (err) {
    if (!signal?.aborted) throw err;
  }
  report.cancelled = signal?.aborted ?? false;
  report.probesSent = budget.probesSent;
  return report;
}

/** The rest of the ports and the fingerprints of one address; null when nothing ever answered. */
async function probeHost(
  ip: string, mac: string | null, livenessEvidence: Evidence[], livenessOpen: number[], target: ScanTarget,
  options: ScanOptions, budget: ProbeBudget, signal: AbortSignal | undefined, tuning: ScanTuning,
): Promise<FoundHost | null> {
  // The full range's slice comes later (addSlice), once the host is known not to be a middlebox's echo.
  const ports = portsToProbe({
    extraPorts: options.extraPorts, known: options.known?.[ip], probeRawSocketPorts: rawSocketPortsOn(target, options),
  }, tuning.ports).filter((p) => !LIVENESS_PORTS.includes(p));
  // A device target (/32) with no liveness evidence gets SNMP only (a switch may answer nothing else).
  const portsToo = livenessEvidence.length > 0 || target.assumeUp === true;
  const sweep = portsToo ? await (tuning.sweep ?? sweepPorts)(ip, ports, budget, signal) : { evidence: [], open: [] };
  const credentials = snmpCredentialsOn(target, options, ip);
  const open = [...livenessOpen, ...sweep.open].sort((a, b) => a - b);
  // Raw printing ports (opted in) come last: a host the other ports show to be a printer gets no payload there.
  const [raw, others] = [open.filter(isRawSocketPort), open.filter((p) => !isRawSocketPort(p))];
  // SNMP beside the fingerprints: a host that does not answer it costs its timeouts once, not before every port.
  const [snmp, first] = await Promise.all([
    credentials.length ? collectSnmp(ip, credentials, { budget, signal, limits: tuning.snmpLimits }) : null,
    Promise.all(others.map((port) => identifyWithCustom(ip, port, budget, { signal, timeouts: tuning.probeTimeouts }, options.customRules))),
  ]);
  const evidence = firstOfEachKind([...livenessEvidence, ...sweep.evidence, ...(snmp ? [{ kind: 'udp' as const, port: 161 }] : [])]);
  if (!evidence.length) return null; // assume-up probes every port but never invents a host
  const printer = isPrinter(first.flatMap((i) => (i.service ? [i.service] : [])), snmp);
  const identities = [...first, ...await Promise.all(raw.map((port) => identifyWithCustom(ip, port, budget, { signal, timeouts: tuning.probeTimeouts, listenOnly: printer }, options.customRules)))];
  signal?.throwIfAborted();
  const host: FoundHost = {
    ip, mac, hostname: null, evidence,
    openPorts: [...open.map((port) => ({ port, protocol: 'Tcp' as const })), ...(snmp ? [{ port: 161, protocol: 'Udp' as const }] : [])],
    services: identities.flatMap((i) => (i.service ? [i.service] : [])),
    target,
  };
  if (snmp) host.snmp = snmp;
  await nameHost(host, options, budget, signal, tuning);
  await addVendor(host);
  return host;
}

const isDevice = (target: ScanTarget) => target.cidr.endsWith('/32');

const rawSocketPortsOn = (target: ScanTarget, options: ScanOptions) => options.probeRawSocketPorts === true || target.probeRawSocketPorts === true;

const PUBLIC = { version: 'v2c', community: 'public' } as const satisfies SnmpCredential;

/** The SNMP credentials for one address: the given ones, then `public` where the target allows it. */
export function snmpCredentialsOn(target: ScanTarget, options: Pick<ScanOptions, 'snmp'>, ip: string): SnmpCredential[] {
  const given = credentialsFor(options.snmp, ip);
  const hasPublic = given.some((c) => c.version === 'v2c' && c.community === PUBLIC.community);
  return target.snmpPublic && !hasPublic ? [...given, PUBLIC] : given;
}

/** What the host's other answers say of it being a printer: IPP or LPD, a printer finding (Recog), a printer's sysDescr. */
export function isPrinter(services: FoundService[], snmp: { system: { descr: string | null } } | null): boolean {
  if (services.some((s) => [631, 515].includes(s.port) || (s.findings ?? []).some((f) => /printer|mfp/i.test(f.deviceType ?? '')))) return true;
  return /printer|laserjet|officejet|jetdirect|mfp|imagerunner|workcentre|bizhub/i.test(snmp?.system.descr ?? '');
}

/**
 * This run's slice of the full port range, for a host worth it: probed only after the light set has
 * shown the host is real (validated, or judged with its whole target), so a middlebox range's echoes
 * never cost a thousand probes each (measured in bench/discovery.ts: most of the agent's time).
 */
async function addSlice(host: FoundHost, options: ScanOptions, budget: ProbeBudget, signal: AbortSignal | undefined, tuning: ScanTuning): Promise<FoundHost> {
  if (!options.fullRangeSlice) return host;
  const raw = rawSocketPortsOn(host.target, options);
  const probed = new Set([...LIVENESS_PORTS, ...portsToProbe({ extraPorts: options.extraPorts, known: options.known?.[host.ip], probeRawSocketPorts: raw }, tuning.ports)]);
  const slice = portsToProbe({ fullRangeSlice: options.fullRangeSlice, probeRawSocketPorts: raw }, []).filter((p) => !probed.has(p));
  if (!slice.length) return host;
  const sweep = await (tuning.sweep ?? sweepPorts)(host.ip, slice, budget, signal);
  if (!sweep.open.length) return host;
  const printer = isPrinter(host.services, host.snmp ?? null);
  const identities = await Promise.all(sweep.open.map((port) => identifyWithCustom(host.ip, port, budget, { signal, timeouts: tuning.probeTimeouts, listenOnly: printer && isRawSocketPort(port) }, options.customRules)));
  signal?.throwIfAborted();
  const tcp = [...host.openPorts.filter((p) => p.protocol === 'Tcp').map((p) => p.port), ...sweep.open].sort((a, b) => a - b);
  host.openPorts = [...tcp.map((port) => ({ port, protocol: 'Tcp' as const })), ...host.openPorts.filter((p) => p.protocol !== 'Tcp')];
  host.services = [...host.services, ...identities.flatMap((i) => (i.service ? [i.service] : []))].sort((a, b) => a.port - b.port);
  host.evidence = firstOfEachKind([...host.evidence, ...sweep.evidence]);
  return host;
}

/** PTR (from the operator's resolver), else mDNS (asked of the host), else SNMP sysName. */
async function nameHost(host: FoundHost, options: ScanOptions, budget: ProbeBudget, signal: AbortSignal | undefined, tuning: ScanTuning): Promise<void> {
  const ptr = tuning.reverseDns ? await tuning.reverseDns(host.ip) : null;
  const mdns = !ptr && options.mdns ? await budget.probe(() => mdnsName(host.ip, tuning.mdns), signal) : null;
  const [hostname, source] = ptr ? [ptr, 'ptr' as const] : mdns ? [mdns, 'mdns' as const] : host.snmp?.system.name ? [host.snmp.system.name, 'snmp' as const] : [null, undefined];
  host.hostname = hostname;
  if (source) host.hostnameSource = source;
}

async function addVendor(host: FoundHost): Promise<void> {
  if (!host.mac) return;
  const facts = vendorOf(await ouiTable(), host.mac);
  host.macIsRandom = facts.random || isRandomMac(host.mac);
  host.macVendor = facts.vendor;
}

/**
 * Hosts a device's ARP table (IP-MIB over SNMP) knows and the sweep did not find (behind a router,
 * or silent): found from that table alone, nothing sent to them, and only inside the targets.
 */
async function recordFromArp(report: ScanReport, expanded: ReturnType<typeof expandTargets>, record: (h: FoundHost) => Promise<void>): Promise<void> {
  const targetOf = new Map<string, ScanTarget>();
  for (const { target, addresses } of expanded) for (const a of addresses) if (!targetOf.has(a)) targetOf.set(a, target);
  const found = new Set(report.hosts.map((h) => h.ip));
  for (const device of [...report.hosts]) {
    for (const { ip, mac } of device.snmp?.arp ?? []) {
      const target = targetOf.get(ip);
      if (!target || found.has(ip)) continue;
      found.add(ip);
      const host: FoundHost = { ip, mac, hostname: null, evidence: [{ kind: 'snmp_arp', mac, device: device.ip }], openPorts: [], services: [], target };
      await addVendor(host);
      await record(host);
    }
  }
}

/** One evidence per kind (the lowest port): enough to say why, without a line per refused port. */
function firstOfEachKind(evidence: Evidence[]): Evidence[] {
  const byKind = new Map<string, Evidence>();
  const port = (e: Evidence) => ('port' in e ? e.port : 0);
  for (const e of evidence) {
    const seen = byKind.get(e.kind);
    if (!seen || port(e) < port(seen)) byKind.set(e.kind, e);
  }
  return [...byKind.values()];
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachAtOnce<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
