// The agent's IPv4 arithmetic, on ipaddr.js (the server uses the same library). The agent scans
// IPv4 only; what is here names the concepts its code uses: a dotted quad, a network with its
// prefix, membership, and an address as a number (a range is listed by counting).
import ipaddr from 'ipaddr.js';

export type IPv4 = ipaddr.IPv4;

/**
 * A dotted quad of four decimal parts, each 0–255; undefined otherwise. Shorthands ipaddr.js would
 * also read (127.1, 0x7f.0.0.1, 2130706433) and leading zeros (010.0.0.1, octal to inet_aton and
 * so to ping) are refused: a target or a resolver is written in full.
 */
export function parseIPv4(text: string): IPv4 | undefined {
  return ipaddr.IPv4.isValidFourPartDecimal(text) ? ipaddr.IPv4.parse(text) : undefined;
}

export const isIPv4 = (text: string): boolean => ipaddr.IPv4.isValidFourPartDecimal(text);

/** The address with its host bits cleared. */
export function networkAddress(address: IPv4, prefix: number): IPv4 {
  return ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${prefix}`);
}

/** "a.b.c.d/len" whose address is a dotted quad and len 0–32, as a [network, prefix] pair; undefined otherwise. */
export function parseIPv4Cidr(cidr: string): [IPv4, number] | undefined {
  const [address = '', prefixText, ...rest] = cidr.split('/');
  const ip = parseIPv4(address);
  if (!ip || rest.length || prefixText === undefined || !/^\d{1,2}$/.test(prefixText) || Number(prefixText) > 32) return undefined;
  return [networkAddress(ip, Number(prefixText)), Number(prefixText)];
}

/** Whether `ip` (a dotted quad) lies in `network`/`prefix`; false for anything else. */
export function inNetwork(ip: string, network: IPv4, prefix: number): boolean {
  return parseIPv4(ip)?.match(network, prefix) ?? false;
}

/** The address as an unsigned 32-bit number (big-endian, as on the wire). */
export function ipv4ToNumber(address: IPv4): number {
  return Buffer.from(address.octets).readUInt32BE(0);
}

export function ipv4FromNumber(n: number): IPv4 {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(n, 0);
  return new ipaddr.IPv4([...bytes]);
}

export const numberToIPv4 = (n: number): string => ipv4FromNumber(n).toString();
