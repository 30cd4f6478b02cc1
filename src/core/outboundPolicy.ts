// Where the server may send a request of its own (daemon polls now, webhooks next): one policy,
// checked when an address is saved and again when connecting, against the address actually
// dialled (a name that resolved to a LAN address yesterday and to 127.0.0.1 now is refused now).
//
// Refused: loopback, link-local (cloud metadata 169.254.169.254, fd00:ec2::254), unspecified,
// multicast, broadcast and reserved addresses, in every spelling (the WHATWG URL parser turns
// 2130706433, 0177.0.0.1, 0x7f.1 and 127.1 into 127.0.0.1; IPv4-mapped, -compatible and -translated,
// NAT64 and 6to4 IPv6 addresses are judged by the IPv4 address inside). Private ranges stay allowed:
// daemons live on LANs.
// DAEMON_ALLOWED_NETWORKS (CIDR list) allows more, e.g. 127.0.0.0/8 for a daemon on this machine.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';

const DENIED_V4 = ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '224.0.0.0/4', '240.0.0.0/4'];
// Local-use NAT64 (64:ff9b:1::/48) and Teredo (2001::/32) hide the IPv4 address they lead to: refused whole.
const DENIED_V6 = ['::/128', '::1/128', 'fe80::/10', 'ff00::/8', 'fd00:ec2::254/128', '64:ff9b:1::/48', '2001::/32'];
/** Refused too for destinations outside the operator's networks (webhooks): private, shared (CGNAT) and unique-local ranges. */
const PRIVATE = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '198.18.0.0/15', '192.0.0.0/24', 'fc00::/7', 'fec0::/10'];

export type RefusalReason = 'scheme' | 'userinfo' | 'query_or_fragment' | 'invalid_url' | 'address';

export class OutboundRefused extends Error {
  constructor(readonly reason: RefusalReason, readonly detail: string) {
    super(`outbound request refused (${reason}): ${detail}`);
    this.name = 'OutboundRefused';
  }
}

function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } {
  const [address = '', prefixText] = cidr.trim().split('/');
  const version = isIP(address);
  const prefix = prefixText === undefined ? (version === 4 ? 32 : 128) : Number(prefixText);
  if (!version || !Number.isInteger(prefix) || prefix < 0 || prefix > (version === 4 ? 32 : 128)) throw new Error(`not a CIDR: '${cidr}'`);
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

function blockList(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const { address, prefix, family } = parseCidr(cidr);
    list.addSubnet(address, prefix, family);
  }
  return list;
}

/** Prefixes whose last 32 bits are an IPv4 address: IPv4-mapped, IPv4-translated, NAT64 (RFC 6052's well-known prefix). */
const CARRY_IPV4_IN_LAST_32_BITS = ['::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96'].map((cidr) => ipaddr.IPv6.parseCIDR(cidr));
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16');

/**
 * The IPv4 address an IPv6 address carries, by which it is judged (a packet to it reaches that IPv4
 * address through a translator or tunnel, or on this host's dual stack): IPv4-mapped ::ffff:0:0/96,
 * IPv4-translated ::ffff:0:0:0/96, IPv4-compatible ::/96 (but :: and ::1 themselves), NAT64 64:ff9b::/96
 * and 6to4 2002::/16 (the IPv4 address in bits 16–47).
 */
function embeddedIPv4(ip: string): string | undefined {
  if (!ipaddr.IPv6.isValid(ip)) return undefined;
  const address = ipaddr.IPv6.parse(ip);
  const bytes = address.toByteArray();
  const ipv4 = (from: number) => ipaddr.fromByteArray(bytes.slice(from, from + 4)).toString();
  if (CARRY_IPV4_IN_LAST_32_BITS.some((range) => address.match(range))) return ipv4(12);
  if (address.match(IPV4_COMPATIBLE) && !['unspecified', 'loopback'].includes(address.range())) return ipv4(12);
  if (address.match(SIX_TO_FOUR)) return ipv4(2);
  return undefined;
}

export class OutboundPolicy {
  private readonly denied: BlockList;
  private readonly allowed: BlockList;

  /**
   * `allowedNetworks`: CIDRs allowed even inside a refused range (DAEMON_ALLOWED_NETWORKS,
   * WEBHOOK_ALLOWED_NETWORKS). `denyPrivate`: private ranges refused too (webhooks go to the
   * internet; daemons live on LANs).
   */
  constructor(readonly allowedNetworks: string[] = [], opts: { denyPrivate?: boolean } = {}) {
    this.allowed = blockList(allowedNetworks);
    this.denied = blockList([...DENIED_V4, ...DENIED_V6, ...(opts.denyPrivate ? PRIVATE : [])]);
  }

  /** Whether the server may connect to this IP address. */
  addressAllowed(ip: string): boolean {
    const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
    const v4 = isIPv4(bare) ? bare : isIP(bare) === 6 ? embeddedIPv4(bare) : undefined;
    const [address, family] = v4 ? [v4, 'ipv4' as const] : [bare, 'ipv6' as const];
    if (!isIP(address)) return false;
    if (this.allowed.check(address, family) || (v4 && this.allowed.check(bare, isIPv4(bare) ? 'ipv4' : 'ipv6'))) return true;
    return !this.denied.check(address, family);
  }

  /** The URL's form (http(s), no userinfo, query or fragment) and, for an IP literal, its address. */
  parse(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundRefused('invalid_url', raw);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundRefused('scheme', url.protocol);
    if (url.username || url.password) throw new OutboundRefused('userinfo', 'credentials in the URL');
    if (url.search || url.hash || /[?#]/.test(raw)) throw new OutboundRefused('query_or_fragment', 'the server builds the paths');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !this.addressAllowed(host)) throw new OutboundRefused('address', host);
    return url;
  }

  /** parse(), then every address the host name resolves to (when it resolves). */
  async check(raw: string): Promise<URL> {
    const url = this.parse(raw);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) return url;
    const addresses = await new Promise<LookupAddress[]>((resolve) => dnsLookup(host, { all: true }, (err, list) => resolve(err ? [] : list)));
    const refused = addresses.find((a) => !this.addressAllowed(a.address));
    if (refused) throw new OutboundRefused('address', `${host} resolves to ${refused.address}`);
    return url;
  }

  /** A `lookup` for node:http(s) that refuses a name resolving to any refused address: the check at connect time. */
  readonly lookup = (hostname: string, options: object, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.find((a) => !this.addressAllowed(a.address));
      if (refused) return callback(new OutboundRefused('address', `${hostname} resolves to ${refused.address}`), '', 0);
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** DAEMON_ALLOWED_NETWORKS: a comma- or space-separated CIDR list; a bad entry stops the start with its name. */
export function parseAllowedNetworks(text: string | undefined, variable = 'DAEMON_ALLOWED_NETWORKS'): string[] {
  const list = (text ?? '').split(/[\s,]+/).filter(Boolean);
  for (const cidr of list) {
    try {
      parseCidr(cidr);
    } catch {
      throw new Error(`${variable}: '${cidr}' is not a CIDR (e.g. 127.0.0.0/8, ::1/128)`);
    }
  }
  return list;
}
