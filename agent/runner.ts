// One discovery session, as a 0.14.13 daemon runs it (daemon-protocol.md §1.1 step 4): SelfReport
// (subnets → Started → update-capabilities → host → Complete) or Network (targets → Started →
// Scanning progress → one host report per live host as soon as it is probed → exactly one terminal
// Complete | Cancelled | Failed). The transport hides the mode: daemon_poll posts to the server,
// server_poll buffers for the server's next poll.
import type { AgentConfig } from './config.js';
import type { DiscoveryType, RunReport, WorkPayload } from './protocol/client.js';
import { inNetwork, parseIPv4Cidr } from './net/ip.js';
import { customRules, withoutDefinitions } from './fingerprint/custom.js';
import { evidenceSummary, hostRequest, networkDiscoveryType, redactDiscoveryType, subnetBody, type HostRequest, type SubnetBody } from './protocol/entities.js';
import type { ScanNetwork, ScanReport, ScanTarget } from './scan/types.js';
import { anyDockerAnswers, runDocker, type DockerDeps } from './docker.js';
import { readLocalHost, selfHostRequest, selfSubnets, type LocalHost } from './selfReport.js';
import { mergeCredentials } from './snmp/credentials.js';
import type { AgentState } from './state.js';

export interface Transport {
  /** The stored subnet (its id may be an existing subnet's: use it). */
  postSubnet(body: SubnetBody): Promise<{ id: string; cidr: string }>;
  /** Every subnet of the network (to resolve a work's subnet_ids). */
  listSubnets(): Promise<Array<{ id: string; cidr: string }>>;
  postHost(request: HostRequest): Promise<void>;
  /** Progress; failures are logged, never fatal (as upstream). */
  update(payload: WorkPayload): Promise<void>;
  updateCapabilities(capabilities: { has_docker_socket: boolean; interfaced_subnet_ids: string[] }): Promise<void>;
  /** Waits until every entity reported is stored (server_poll: confirmed), before the terminal update. */
  flush?(): Promise<void>;
}

export interface Log {
  /** Every call to the server with its time (AGENT_LOG_LEVEL=debug). */
  debug?(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
  warn(msg: string, extra?: Record<string, unknown>): void;
  error(msg: string, extra?: Record<string, unknown>): void;
}

export interface RunnerDeps extends DockerDeps {
  transport: Transport;
  scanNetwork: ScanNetwork;
  state: AgentState;
  saveState: () => void;
  config: Pick<AgentConfig, 'targets' | 'pps' | 'sockets' | 'probeRawSocketPorts' | 'fullRangeRuns'> & Partial<Pick<AgentConfig, 'docker' | 'snmp' | 'snmpPublic' | 'dns' | 'mdns'>>;
  networkId: string;
  daemonId: string;
  log: Log;
  /** The agent's API port (server_poll), reported in the self-report. */
  listenPort: number | null;
  now?: () => Date;
  readLocal?: () => LocalHost;
  /** Scanning updates: at most one per progressMinMs when progress rises, one per keepAliveMs anyway (upstream 10 s / 30 s). */
  progressMinMs?: number;
  keepAliveMs?: number;
}

export interface SessionResult {
  terminal: WorkPayload;
  warnings: string[];
  hostsReported: number;
  report?: ScanReport;
}

/**
 * A Complete with warnings carries them in `error` (the server stores it and shows it with the
 * daemon's sessions, GET /api/v1/daemons/:id/sessions): a run that found nothing where there were
 * hosts is a visible warning, not a silent success. No warning: null, as upstream.
 */
const warningText = (warnings: string[]) => (warnings.length ? `Warning: ${warnings.join('\n')}`.slice(0, 10_000) : null);

/** The server's bounds on a report (sessionReport): at most 100 lines of at most 500 characters. */
const REPORT_LINES = 100;
const REPORT_TEXT = 500;
const lines = (texts: string[]) => texts.slice(0, REPORT_LINES).map((t) => (t.length > REPORT_TEXT ? `${t.slice(0, REPORT_TEXT - 1)}…` : t));

/** The run's report from the scanner's: what was tried, found alive and by what evidence, recognised by which rule. */
export function runReport(report: ScanReport | undefined, warnings: string[], incomplete: string[]): RunReport {
  const servicesByRule: Record<string, number> = {};
  for (const h of report?.hosts ?? []) for (const s of h.services) servicesByRule[s.rule] = (servicesByRule[s.rule] ?? 0) + 1;
  return {
    addresses_tried: report?.addressesTried ?? 0,
    alive_by_evidence: { ...(report?.aliveByEvidence ?? {}) },
    services_by_rule: servicesByRule,
    warnings: lines(warnings),
    incomplete: lines(incomplete),
    probes_sent: report?.probesSent ?? 0,
  };
}

/** Whether `ip` lies in `cidr` (both IPv4; false for anything else, an IPv6 container address included). */
export function cidrContains(cidr: string, ip: string): boolean {
  const network = parseIPv4Cidr(cidr);
  return network !== undefined && inNetwork(ip, ...network);
}

export async function runSession(work: { session_id: string; discovery_type: DiscoveryType }, signal: AbortSignal, deps: RunnerDeps): Promise<SessionResult> {
  const now = deps.now ?? (() => new Date());
  let startedAt: string | null = null;
  let progress = 0;
  // The work's SNMP communities came in plaintext; what goes back is redacted (reference §0).
  const reportedType = redactDiscoveryType(withoutDefinitions(work.discovery_type)) as DiscoveryType;
  const payload = (phase: WorkPayload['phase'], error: string | null = null, finished = false): WorkPayload => ({
    session_id: work.session_id, daemon_id: deps.daemonId, network_id: deps.networkId, phase, discovery_type: reportedType,
    progress: phase === 'Complete' ? 100 : progress, error, started_at: startedAt, finished_at: finished ? now().toISOString() : null,
  });
  const send = async (p: WorkPayload) => {
    try {
      await deps.transport.update(p);
    } catch (err) {
      deps.log.warn('progress update not delivered', { phase: p.phase, err: (err as Error).message });
    }
  };
  const start = async () => {
    startedAt = now().toISOString();
    await send(payload('Started'));
  };
  const finish = async (phase: 'Complete' | 'Cancelled' | 'Failed', error: string | null, extra: Omit<SessionResult, 'terminal'>, report?: RunReport): Promise<SessionResult> => {
    if (phase === 'Complete') {
      try {
        await deps.transport.flush?.();
      } catch (err) {
        deps.log.warn('found entities not confirmed by the server', { err: (err as Error).message });
      }
    }
    const terminal = report ? { ...payload(phase, error, true), report } : payload(phase, error, true);
    await send(terminal);
    deps.log.info(`session ${phase}`, { session_id: work.session_id, type: work.discovery_type.type, hosts: extra.hostsReported, error });
    return { terminal, ...extra };
  };

  try {
    if (work.discovery_type.type === 'SelfReport') {
      // A Docker socket is claimed only when a configured endpoint answers /_ping (the server then queues
      // Docker work); then the Docker session reports the Docker bridges, per Docker host (as upstream, not here).
      const hasDocker = await anyDockerAnswers(deps.config.docker ?? []);
      const read = (deps.readLocal ?? readLocalHost)();
      const local = hasDocker ? { ...read, interfaces: read.interfaces.filter((i) => i.subnetType !== 'DockerBridge') } : read;
      deps.state.selfSince ??= now().toISOString();
      deps.saveState();
      const ctx = { networkId: deps.networkId, daemonId: deps.daemonId, discoveryType: work.discovery_type, date: deps.state.selfSince, listenPort: deps.listenPort };
      const ids = new Map<string, string>();
      for (const subnet of selfSubnets(local, ctx)) ids.set(subnet.cidr, (await deps.transport.postSubnet(subnet)).id);
      await start();
      await deps.transport.updateCapabilities({ has_docker_socket: hasDocker, interfaced_subnet_ids: [...new Set(ids.values())] });
      await deps.transport.postHost(selfHostRequest(local, ctx, ids));
      return await finish('Complete', null, { warnings: [], hostsReported: 1 });
    }
    if (work.discovery_type.type === 'Docker') return await runDocker(work, signal, deps, { start, finish });
    if (work.discovery_type.type === 'Network') return await runNetwork(work, signal, deps, { start, send, finish, payload, setProgress: (p) => { progress = p; } });
    await start();
    return await finish('Failed', `${work.discovery_type.type} discovery is not supported by this agent (SelfReport, Network and Docker are)`, { warnings: [], hostsReported: 0 });
  } catch (err) {
    if (signal.aborted) return finish('Cancelled', null, { warnings: [], hostsReported: 0 });
    if (!startedAt) await start();
    return finish('Failed', (err as Error).message.slice(0, 2000), { warnings: [], hostsReported: 0 });
  }
}

interface Steps {
  start(): Promise<void>;
  send(p: WorkPayload): Promise<void>;
  finish(phase: 'Complete' | 'Cancelled' | 'Failed', error: string | null, extra: Omit<SessionResult, 'terminal'>, report?: RunReport): Promise<SessionResult>;
  payload(phase: WorkPayload['phase']): WorkPayload;
  setProgress(p: number): void;
}

/** `target_options` of a Network work (src/modules/daemons/targets.ts withApprovedTargets), the well-formed entries. */
function targetOptionsOf(discoveryType: object): Array<{ subnet_id: string; snmp_public?: boolean; probe_raw_socket_ports?: boolean }> {
  const list = (discoveryType as { target_options?: unknown }).target_options;
  return Array.isArray(list) ? list.filter((o) => o && typeof o === 'object' && typeof o.subnet_id === 'string') : [];
}

/** The targets of a Network work: the server's subnets it names (subnet_ids) plus --targets; nothing else. */
async function resolveTargets(
  dt: DiscoveryType & { subnet_ids?: string[] | null }, work: object, deps: RunnerDeps, warnings: string[],
): Promise<ScanTarget[]> {
  const targets = new Map<string, ScanTarget>();
  // What each approval allows (SNMP `public`, the raw printing ports); --no-snmp-public wins over the server.
  const options = new Map(targetOptionsOf(work).map((o) => [o.subnet_id, o]));
  const snmpPublic = deps.config.snmpPublic !== false;
  if (Array.isArray(dt.subnet_ids) && dt.subnet_ids.length) {
    const subnets = await deps.transport.listSubnets();
    for (const id of dt.subnet_ids) {
      const subnet = subnets.find((s) => s.id === id);
      const o = options.get(id);
      if (!subnet) warnings.push(`subnet ${id} named by the work is not on the server`);
      else if (!/^\d+\.\d+\.\d+\.\d+\/\d+$/.test(subnet.cidr)) warnings.push(`subnet ${subnet.cidr}: only IPv4 subnets are scanned`);
      else targets.set(subnet.cidr, { cidr: subnet.cidr, subnetId: subnet.id, snmpPublic: snmpPublic && o?.snmp_public !== false, probeRawSocketPorts: o?.probe_raw_socket_ports === true });
    }
  }
  for (const cidr of deps.config.targets) {
    if (targets.has(cidr)) continue;
    const date = (deps.now ?? (() => new Date()))().toISOString();
    const stored = await deps.transport.postSubnet(subnetBody({ cidr, networkId: deps.networkId, daemonId: deps.daemonId, discoveryType: dt, date }));
    targets.set(cidr, { cidr, subnetId: stored.id, snmpPublic });
  }
  return [...targets.values()];
}

async function runNetwork(work: { session_id: string; discovery_type: DiscoveryType }, signal: AbortSignal, deps: RunnerDeps, steps: Steps): Promise<SessionResult> {
  const now = deps.now ?? (() => new Date());
  const dt = networkDiscoveryType((work.discovery_type as any).subnet_ids ?? null, work.discovery_type as Record<string, unknown>);
  const warnings: string[] = [];
  const custom = customRules((work.discovery_type as { service_definitions?: unknown }).service_definitions);
  warnings.push(...custom.refused);
  const targets = await resolveTargets(dt, work.discovery_type as object, deps, warnings);
  await steps.start();
  if (!targets.length) {
    warnings.push('nothing to scan: no subnet approved for this agent on the server and no --targets (the agent never scans its own subnets unasked)');
    for (const w of warnings) deps.log.warn(w);
    return steps.finish('Complete', warningText(warnings), { warnings, hostsReported: 0 }, runReport(undefined, warnings, []));
  }

  const state = deps.state;
  const runIndex = state.runCounter++;
  deps.saveState();
  const known: Record<string, number[]> = {};
  for (const [ip, host] of Object.entries(state.hosts)) if (host.ports.length && targets.some((t) => cidrContains(t.cidr, ip))) known[ip] = host.ports;

  // Progress: a Scanning update when progress rose and the last one is progressMinMs old; a keep-alive every keepAliveMs.
  const minMs = deps.progressMinMs ?? 10_000;
  let lastSent = Date.now();
  let current = 0;
  let sentProgress = 0;
  const keepAlive = setInterval(() => {
    lastSent = Date.now();
    void steps.send(steps.payload('Scanning'));
  }, deps.keepAliveMs ?? 30_000);
  keepAlive.unref?.();

  let hostsReported = 0;
  const reportFailures: string[] = [];
  let report: ScanReport;
  try {
    report = await deps.scanNetwork({
      targets,
      budget: { probesPerSecond: deps.config.pps, maxOpenSockets: deps.config.sockets },
      probeRawSocketPorts: (dt as { probe_raw_socket_ports?: boolean }).probe_raw_socket_ports === true || deps.config.probeRawSocketPorts,
      fullRangeSlice: deps.config.fullRangeRuns > 0 ? { index: runIndex % deps.config.fullRangeRuns, of: deps.config.fullRangeRuns } : undefined,
      known,
      ...(custom.rules.length ? { customRules: custom.rules, extraPorts: custom.ports } : {}),
      snmp: mergeCredentials((dt as { snmp_credentials?: unknown }).snmp_credentials, deps.config.snmp ?? []),
      dnsServer: deps.config.dns ?? undefined,
      mdns: deps.config.mdns,
      signal,
      onProgress: (percent) => {
        current = Math.max(current, Math.min(99, Math.floor(percent)));
        steps.setProgress(current);
        if (current > sentProgress && Date.now() - lastSent >= minMs) {
          lastSent = Date.now();
          sentProgress = current;
          void steps.send(steps.payload('Scanning'));
        }
      },
      onHost: async (host) => {
        if (signal.aborted) return;
        const entry = (state.hosts[host.ip] ??= { firstSeen: now().toISOString(), description: evidenceSummary(host), ports: [] });
        const request = hostRequest(host, {
          networkId: deps.networkId, daemonId: deps.daemonId, subnetId: host.target.subnetId!, discoveryType: dt, date: entry.firstSeen, description: entry.description,
        });
        try {
          await deps.transport.postHost(request);
          hostsReported++;
        } catch (err) {
          reportFailures.push(`${host.ip}: ${(err as Error).message}`);
        }
      },
    });
  } finally {
    clearInterval(keepAlive);
  }

  if (signal.aborted || report.cancelled) {
    const cut = [`the run was cancelled after ${report.addressesTried} addresses: hosts not yet probed are missing from it`];
    return steps.finish('Cancelled', null, { warnings, hostsReported, report }, runReport(report, warnings, cut));
  }

  // What the next run needs: open ports per address (probed again: a stopped service is noticed), hosts per target.
  for (const host of report.hosts) {
    const entry = (state.hosts[host.ip] ??= { firstSeen: now().toISOString(), description: evidenceSummary(host), ports: [] });
    entry.ports = [...new Set(host.openPorts.filter((p) => p.protocol === 'Tcp').map((p) => p.port))].sort((a, b) => a - b);
  }
  warnings.push(...report.warnings);
  for (const t of targets) {
    const count = report.hosts.filter((h) => h.target.cidr === t.cidr).length;
    const before = state.targetHosts[t.cidr] ?? 0;
    if (before > 0 && count === 0) warnings.push(`${t.cidr}: no host answered (${before} last run): is the target reachable from this agent?`);
    state.targetHosts[t.cidr] = count;
  }
  deps.saveState();
  if (reportFailures.length) warnings.push(`${reportFailures.length} host report(s) not accepted by the server: ${reportFailures.slice(0, 3).join('; ')}`);
  for (const w of warnings) deps.log.warn(w, { session_id: work.session_id });
  const summary = runReport(report, warnings, [...(report.incomplete ?? []), ...reportFailures.map((f) => `host not stored: ${f}`)]);
  if (reportFailures.length && !hostsReported) return steps.finish('Failed', warnings.at(-1)!, { warnings, hostsReported, report }, summary);
  return steps.finish('Complete', warningText(warnings), { warnings, hostsReported, report }, summary);
}
