// Which addresses a run may probe: exactly the addresses of its targets, nothing else. IPv4 only.
import { type IPv4, ipv4FromNumber, ipv4ToNumber, networkAddress, numberToIPv4, parseIPv4 } from '../net/ip.js';
import type { ScanTarget } from './types.js';

/** The largest target accepted: a /16 (65,536 addresses). Bigger ranges are refused, not cut. */
export const MAX_TARGET_ADDRESSES = 65_536;
/** The most addresses one run probes, over all its targets (four /16s' worth): more refuses the run. */
export const MAX_RUN_ADDRESSES = 4 * MAX_TARGET_ADDRESSES;

export interface ParsedCidr {
  /** Network address as an unsigned 32-bit number. */
  network: number;
  prefix: number;
}

/** A dotted quad, or an error naming it (the agent probes IPv4 only). */
export function requireIPv4(ip: string): IPv4 {
  const address = parseIPv4(ip);
  if (!address) throw new Error(`not an IPv4 address: "${ip}"`);
  return address;
}

/** "198.18.10.0/24" (or a bare address: /32). Host bits set ("198.18.10.7/24") are refused: likely a typo. */
export function parseCidr(cidr: string): ParsedCidr {
  const [ip = '', bits, extra] = cidr.trim().split('/');
  if (extra !== undefined) throw new Error(`not an IPv4 CIDR: "${cidr}"`);
  const prefix = bits === undefined ? 32 : Number(bits);
  if (!/^\d{1,2}$/.test(bits ?? '32') || prefix > 32) throw new Error(`bad prefix length in "${cidr}"`);
  const address = requireIPv4(ip);
  const network = networkAddress(address, prefix);
  if (network.toString() !== address.toString()) throw new Error(`"${cidr}" has host bits set (network is ${network.toString()}/${prefix})`);
  return { network: ipv4ToNumber(network), prefix };
}

export function cidrContains(c: ParsedCidr, ip: string): boolean {
  return requireIPv4(ip).match(ipv4FromNumber(c.network), c.prefix);
}

/**
 * The addresses of one CIDR to probe, in order. The network and broadcast addresses are skipped
 * (a broadcast answered by many hosts invents one), except on /31 and /32 where every address is a host.
 */
export function expandCidr(cidr: string): string[] {
  const { network, prefix } = parseCidr(cidr);
  const size = 2 ** (32 - prefix);
  if (size > MAX_TARGET_ADDRESSES) {
    throw new Error(`target ${cidr} has ${size} addresses: more than the ${MAX_TARGET_ADDRESSES} (/16) a target may have; split it or narrow it`);
  }
  const first = prefix >= 31 ? network : network + 1;
  const last = prefix >= 31 ? network + size - 1 : network + size - 2;
  const out: string[] = [];
  for (let n = first; n <= last; n++) out.push(numberToIPv4(n));
  return out;
}

export interface TargetAddresses {
  target: ScanTarget;
  addresses: string[];
}

/**
 * Every target expanded, an address listed once (under the first target that holds it). All targets
 * are checked before anything is probed: one bad target refuses the whole run.
 */
export function expandTargets(targets: ScanTarget[]): TargetAddresses[] {
  const seen = new Set<string>();
  const expanded = targets.map((target) => ({ target, addresses: expandCidr(target.cidr) }));
  const total = expanded.reduce((n, t) => n + t.addresses.length, 0);
  if (total > MAX_RUN_ADDRESSES) throw new Error(`${total} addresses in all targets: more than ${MAX_RUN_ADDRESSES} per run`);
  return expanded.map(({ target, addresses }) => ({
    target,
    addresses: addresses.filter((a) => (seen.has(a) ? false : (seen.add(a), true))),
  }));
}
