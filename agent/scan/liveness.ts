// Unprivileged liveness: a TCP connect to a few ports. A completed handshake (tcp_open) and a
// refused one (tcp_refused: the host, or something for it, sent a RST) are evidence; a timeout is
// not. The kernel's neighbour table adds MAC evidence on on-link targets (neighbours.ts).
//
// With CAP_NET_RAW the agent could add raw ARP requests (evidence `arp`, also for hosts that drop
// every TCP port) and ICMP echo (evidence `icmp`); both are left out: the default runs without
// privileges, and the neighbour table gives the ARP answers the kernel already got for our connects.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import type { ProbeBudget } from './budget.js';
import type { Evidence } from './types.js';

/** CAP_NET_RAW is capability bit 13. */
const CAP_NET_RAW = 13n;

/** Whether a /proc/<pid>/status text shows CAP_NET_RAW in the effective set (CapEff). */
export function statusHasNetRaw(status: string): boolean {
  const hex = /^CapEff:\s*([0-9a-f]+)$/im.exec(status)?.[1];
  return hex !== undefined && ((BigInt(`0x${hex}`) >> CAP_NET_RAW) & 1n) === 1n;
}

/** What CAP_NET_RAW would add, for logs and --help: said whether or not the agent has it. */
export function rawProbesNote(): string {
  let has = false;
  try {
    has = statusHasNetRaw(readFileSync('/proc/self/status', 'utf8'));
  } catch {
    // not Linux: no capability sets to read
  }
  return `${has ? 'CAP_NET_RAW present' : 'no CAP_NET_RAW'}: liveness uses TCP connects and the kernel's neighbour table; `
    + 'raw ARP requests (evidence arp) and ICMP echo (evidence icmp), which CAP_NET_RAW would allow, are not implemented in this version';
}

/** Liveness ports: tried on every address (any answer, even a RST, shows the host). */
export const LIVENESS_PORTS: readonly number[] = [22, 80, 443, 445, 139, 3389, 8080, 53];

export type ConnectResult =
  | { state: 'open'; rttMs: number }
  | { state: 'refused'; rttMs: number }
  | { state: 'silent' } // timed out: no evidence
  | { state: 'unreachable'; code: string }; // EHOSTUNREACH and the like: no evidence either

/** One TCP connect within the budget; the socket is closed at once. */
export function connectProbe(ip: string, port: number, budget: ProbeBudget, signal?: AbortSignal): Promise<ConnectResult> {
  return budget.probe(
    () =>
      new Promise<ConnectResult>((resolve) => {
        const started = performance.now();
        const socket = net.connect({ host: ip, port });
        const finish = (result: ConnectResult) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          socket.destroy();
          if (result.state === 'open' || result.state === 'refused') budget.roundTrips.observe(result.rttMs);
          resolve(result);
        };
        const onAbort = () => finish({ state: 'silent' });
        const timer = setTimeout(() => finish({ state: 'silent' }), budget.roundTrips.connectTimeoutMs());
        signal?.addEventListener('abort', onAbort, { once: true });
        socket.once('connect', () => finish({ state: 'open', rttMs: performance.now() - started }));
        socket.once('error', (err: NodeJS.ErrnoException) => {
          if (err.code === 'ECONNREFUSED') finish({ state: 'refused', rttMs: performance.now() - started });
          else finish({ state: 'unreachable', code: err.code ?? String(err) });
        });
      }),
    signal,
  );
}

export interface PortSweep {
  evidence: Evidence[];
  open: number[];
}

/** Connects to every port (in parallel, within the budget): open ports and the evidence they give. */
export async function sweepPorts(ip: string, ports: readonly number[], budget: ProbeBudget, signal?: AbortSignal): Promise<PortSweep> {
  const results = await Promise.all(ports.map(async (port) => ({ port, result: await connectProbe(ip, port, budget, signal) })));
  const evidence: Evidence[] = [];
  const open: number[] = [];
  for (const { port, result } of results) {
    if (result.state === 'open') {
      open.push(port);
      evidence.push({ kind: 'tcp_open', port });
    } else if (result.state === 'refused') {
      evidence.push({ kind: 'tcp_refused', port });
    }
  }
  return { evidence, open: open.sort((a, b) => a - b) };
}
