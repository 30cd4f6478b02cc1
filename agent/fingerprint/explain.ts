// `--explain <address>`: the scan of one address, told step by step: which probes ran, what each
// answered, which rules matched or did not and why. Probes the address like a scan does (same
// budget), so only ever an address the operator named.
import { allowProbeListeners, DEFAULT_BUDGET, ProbeBudget } from '../scan/budget.js';
import { connectProbe, LIVENESS_PORTS, type ConnectResult } from '../scan/liveness.js';
import { isOnLink, onLinkNetworks, readNeighbours } from '../scan/neighbours.js';
import { portsToProbe } from '../scan/ports.js';
import { requireIPv4 } from '../scan/targets.js';
import type { ScanBudget } from '../scan/types.js';
import { identifyPort } from './match.js';
import { escapeBytes, PROBES, type ProbeTimeouts } from './probes.js';

export interface ExplainOptions {
  budget?: ScanBudget;
  /** Ports to probe besides the liveness ports (default: the light set). */
  ports?: number[];
  signal?: AbortSignal;
  /** Shorter waits for tests. */
  probeTimeouts?: ProbeTimeouts;
}

export async function explainAddress(address: string, options: ExplainOptions = {}): Promise<string> {
  requireIPv4(address); // one IPv4 address, not a range
  const limits = options.budget ?? DEFAULT_BUDGET;
  const budget = new ProbeBudget(limits);
  const signal = options.signal;
  allowProbeListeners(signal);
  const lines: string[] = [];
  const ports = [...new Set([...LIVENESS_PORTS, ...(options.ports ?? portsToProbe({}))])].sort((a, b) => a - b);
  lines.push(`explain ${address}: ${ports.length} TCP ports, budget ${limits.probesPerSecond} probes/s and ${limits.maxOpenSockets} sockets`);

  const results = await Promise.all(ports.map(async (port) => ({ port, result: await connectProbe(address, port, budget, signal) })));
  const by = (state: ConnectResult['state']) => results.filter((r) => r.result.state === state).map((r) => r.port);
  const open = by('open');
  const refused = by('refused');
  lines.push(`connect: open ${list(open)}; refused (a RST: alive, evidence tcp_refused) ${list(refused)}; no answer (no evidence) ${list(by('silent'))}`);
  for (const r of results) if (r.result.state === 'unreachable') lines.push(`connect ${r.port}/tcp: ${r.result.code} (no evidence)`);

  if (isOnLink(address, onLinkNetworks())) {
    const mac = (await readNeighbours()).get(address);
    lines.push(mac ? `neighbour table: ${mac} (evidence neighbour)` : 'neighbour table: no usable entry (no answer to ARP, or FAILED/INCOMPLETE)');
  } else {
    lines.push('neighbour table: not read (the address is on no subnet of this machine\'s interfaces: routed, no MAC)');
  }
  const alive = open.length > 0 || refused.length > 0 || lines.at(-1)!.includes('evidence neighbour');
  lines.push(alive ? 'alive: yes' : 'alive: no evidence (a scan records no host here)');

  for (const port of open) {
    signal?.throwIfAborted();
    const identity = await identifyPort(address, port, budget, { signal, timeouts: options.probeTimeouts });
    lines.push(`port ${port}/tcp:`);
    for (const answer of identity.answers) {
      const got = answer.bytes.length ? `answered ${escapeBytes(answer.bytes)}` : 'answered nothing';
      lines.push(`  probe ${PROBES[answer.probe].label}: ${got}${answer.error ? ` (${answer.error})` : ''}`);
      if (answer.cert) lines.push(`    certificate: subject CN ${escapeBytes(answer.cert.subject)}, SAN ${escapeBytes(answer.cert.san)}, issuer ${escapeBytes(answer.cert.issuer)}`);
      const verdicts = identity.verdicts.filter((v) => v.probe === answer.probe);
      const elsewhere = verdicts.filter((v) => !v.outcome.matched && v.outcome.why.startsWith('reads probe'));
      if (elsewhere.length) lines.push(`    ${elsewhere.length} rules read other probes' answers: ${elsewhere.map((v) => v.rule).join(', ')}`);
      for (const v of verdicts.filter((v) => !elsewhere.includes(v))) {
        lines.push(v.outcome.matched ? `    rule ${v.rule}: MATCHED ${v.outcome.shown}` : `    rule ${v.rule}: no (${v.outcome.why})`);
      }
    }
    const s = identity.service;
    lines.push(s ? `  => ${s.name} [${s.definition}] confidence ${s.confidence}: ${s.reason}${s.facts ? ` ${JSON.stringify(s.facts)}` : ''}` : '  => not recognised: no rule matched and no port rule for this port');
  }
  lines.push(`probes sent: ${budget.probesSent}`);
  return lines.join('\n');
}

function list(ports: number[]): string {
  return ports.length ? ports.join(', ') : 'none';
}
