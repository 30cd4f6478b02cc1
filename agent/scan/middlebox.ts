// A middlebox (a firewall's session helper, a transparent proxy) completes handshakes for every
// address of a routed range: a naive scan records hundreds of phantom hosts. When many addresses of
// one target answer exactly the same open ports and none of them said anything a rule validated,
// the target gets one warning and none of those addresses is recorded.
import type { FoundHost } from './types.js';

/** At least this many addresses answering alike… */
export const MIDDLEBOX_MIN_ADDRESSES = 8;
/** …and at least this share of the target's answering addresses. */
export const MIDDLEBOX_MIN_SHARE = 0.5;
/**
 * A firewall that rejects with a TCP reset answers for absent addresses too: every address
 * "refuses" every port. Addresses with no open port and no MAC are phantoms only when nearly all
 * the addresses tried answered that way (a range full of real hosts with nothing open is rare).
 */
export const REFUSING_MIN_SHARE_OF_TRIED = 0.9;

/** Validated: a MAC from the neighbour table, or a service a protocol answer recognised (High or Certain). */
export function isValidated(host: FoundHost): boolean {
  return host.evidence.some((e) => e.kind === 'neighbour' || e.kind === 'arp')
    || host.services.some((s) => s.confidence === 'High' || s.confidence === 'Certain');
}

export interface MiddleboxVerdict {
  /** Addresses not to record. */
  phantoms: Set<string>;
  warnings: string[];
}

/**
 * `answering`: every address of the target with evidence, the validated ones included;
 * `tried`: how many addresses of the target were probed.
 */
export function findMiddleboxes(cidr: string, answering: FoundHost[], tried: number): MiddleboxVerdict {
  const groups = new Map<string, FoundHost[]>();
  const refusing: FoundHost[] = [];
  for (const host of answering) {
    if (isValidated(host)) continue;
    if (host.openPorts.length === 0) {
      refusing.push(host);
      continue;
    }
    const key = host.openPorts.map((p) => `${p.port}/${p.protocol.toLowerCase()}`).sort().join(',');
    const group = groups.get(key) ?? [];
    if (!group.length) groups.set(key, group);
    group.push(host); // not a copy per host: a /16 behind a middlebox is 65,534 of them
  }
  const phantoms = new Set<string>();
  const warnings: string[] = [];
  for (const [key, hosts] of groups) {
    if (hosts.length < MIDDLEBOX_MIN_ADDRESSES || hosts.length < MIDDLEBOX_MIN_SHARE * answering.length) continue;
    for (const h of hosts) phantoms.add(h.ip);
    warnings.push(`${cidr}: ${hosts.length} addresses answered ${key} alike and nothing validated: a middlebox? none recorded`);
  }
  if (refusing.length >= MIDDLEBOX_MIN_ADDRESSES && refusing.length >= REFUSING_MIN_SHARE_OF_TRIED * tried) {
    for (const h of refusing) phantoms.add(h.ip);
    warnings.push(`${cidr}: ${refusing.length} of ${tried} addresses refused every port (a reset) and nothing else: a firewall answering for the range? none recorded`);
  }
  return { phantoms, warnings };
}
