// IP addresses as the server reads and prints them, on ipaddr.js (the agent uses the same library).
// IPv4 and IPv6 alike; the shortest IPv6 form (RFC 5952) is the one PostgreSQL's host(inet) prints.
import ipaddr from 'ipaddr.js';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * IPv4 as four decimal parts, a leading zero read as decimal (as PostgreSQL reads 010.0.0.1, where
 * ipaddr.js alone would read octal); IPv6 in any RFC 4291 form. Throws on anything else.
 */
export function parseIp(text: string): IpAddress {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) return new ipaddr.IPv4(text.split('.').map(Number));
  return ipaddr.IPv6.parse(text);
}

/** An IP as PostgreSQL prints `host(inet)`: IPv6 shortest form, lower case. */
export const canonicalIp = (ip: string): string => parseIp(ip).toString();

/** The network of a syntactically valid CIDR (`10.1.2.3/24` → `10.1.2.0/24`). */
export function networkOf(cidr: string): string {
  const [addressText = '', prefixText = ''] = cidr.split('/');
  const address = parseIp(addressText);
  const canonical = `${address.toString()}/${Number(prefixText)}`;
  const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(canonical) : ipaddr.IPv6.networkAddressFromCIDR(canonical);
  return `${network.toString()}/${Number(prefixText)}`;
}

/** True when the address part of the CIDR is its network address as written (no host bits set). */
export function isNetworkCidr(cidr: string): boolean {
  const [address = ''] = cidr.split('/');
  const network = networkOf(cidr).split('/')[0]!;
  // IPv6 has many spellings of one address; IPv4's one spelling is compared as written.
  return address.includes(':') ? canonicalIp(address) === network : address === network;
}
