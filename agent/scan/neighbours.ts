// MAC addresses from the kernel's neighbour table: no privilege needed. Read after the liveness
// connects, whose ARP requests (sent by the kernel) fill it for on-link addresses.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { promisify } from 'node:util';
import { ipv4ToNumber, networkAddress } from '../net/ip.js';
import { cidrContains, requireIPv4, type ParsedCidr } from './targets.js';

/** States that mean "answered ARP recently"; FAILED / INCOMPLETE (no answer) and PERMANENT (configured) do not. */
const ALIVE_STATES = new Set(['REACHABLE', 'STALE', 'DELAY', 'PROBE']);

/** `ip -j neigh show` output → IPv4 address → MAC (upper case). */
export function parseIpNeighJson(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const rows = JSON.parse(text || '[]') as Array<{ dst?: string; lladdr?: string; state?: string[] | string }>;
  for (const row of rows) {
    const states = Array.isArray(row.state) ? row.state : row.state ? [row.state] : [];
    if (!row.dst || !row.lladdr || !/^\d+\.\d+\.\d+\.\d+$/.test(row.dst)) continue;
    if (!states.some((s) => ALIVE_STATES.has(s))) continue;
    out.set(row.dst, row.lladdr.toUpperCase());
  }
  return out;
}

/** /proc/net/arp → address → MAC: complete entries only (flag ATF_COM 0x2), not permanent ones (ATF_PERM 0x4). */
export function parseProcNetArp(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n').slice(1)) {
    const [ip, , flags, mac] = line.trim().split(/\s+/);
    if (!ip || !mac || mac === '00:00:00:00:00:00') continue;
    const f = parseInt(flags, 16);
    if (!(f & 0x2) || f & 0x4) continue;
    out.set(ip, mac.toUpperCase());
  }
  return out;
}

/** The neighbour table now (`ip -j neigh`, else /proc/net/arp; empty when neither can be read). */
export async function readNeighbours(): Promise<Map<string, string>> {
  try {
    const { stdout } = await promisify(execFile)('ip', ['-j', '-4', 'neigh', 'show'], { timeout: 5000 });
    return parseIpNeighJson(stdout);
  } catch {
    try {
      return parseProcNetArp(await readFile('/proc/net/arp', 'utf8'));
    } catch {
      return new Map();
    }
  }
}

/** A locally administered MAC (second bit of the first octet): often random, never an identity alone. */
export function isRandomMac(mac: string): boolean {
  return (parseInt(mac.slice(0, 2), 16) & 0x02) !== 0;
}

/** The IPv4 networks of this machine's interfaces (not loopback): targets inside them are on-link. */
export function onLinkNetworks(): ParsedCidr[] {
  const out: ParsedCidr[] = [];
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.family !== 'IPv4' || a.internal || !a.cidr) continue;
      const prefix = Number(a.cidr.split('/')[1]);
      out.push({ network: ipv4ToNumber(networkAddress(requireIPv4(a.address), prefix)), prefix });
    }
  }
  return out;
}

export function isOnLink(ip: string, networks: ParsedCidr[]): boolean {
  return networks.some((n) => cidrContains(n, ip));
}
