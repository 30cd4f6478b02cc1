// CIDRs a client sends: a network address with its prefix. `10.1.2.3/24` has host bits set, which
// PostgreSQL's `cidr` refuses with a bare "malformed"; here it is refused naming the network meant.
import Joi from 'joi';

function ipv4ToBigInt(address: string): bigint {
  return address.split('.').reduce((n, part) => (n << 8n) + BigInt(Number(part)), 0n);
}

function ipv6ToBigInt(address: string): bigint {
  let text = address.toLowerCase();
  // An embedded IPv4 tail (::ffff:10.0.0.1) is two groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = ipv4ToBigInt(v4[1]!);
    text = `${text.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].reduce((n, g) => (n << 16n) + BigInt(parseInt(g, 16)), 0n);
}

function bigIntToIpv4(n: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join('.');
}

/** The shortest IPv6 form (RFC 5952: the longest run of zero groups becomes `::`). */
function bigIntToIpv6(n: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((n >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length && j - i > 1) best = { start: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.start < 0) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
}

/** The network of a syntactically valid CIDR (`10.1.2.3/24` → `10.1.2.0/24`). */
export function networkOf(cidr: string): string {
  const [address = '', prefixText = ''] = cidr.split('/');
  const prefix = BigInt(Number(prefixText));
  const v4 = !address.includes(':');
  const bits = v4 ? 32n : 128n;
  const value = v4 ? ipv4ToBigInt(address) : ipv6ToBigInt(address);
  const mask = ((1n << bits) - 1n) ^ ((1n << (bits - prefix)) - 1n);
  const network = value & mask;
  return `${v4 ? bigIntToIpv4(network) : bigIntToIpv6(network)}/${prefix}`;
}

/** True when the address part of the CIDR is its network address (no host bits set). */
export function isNetworkCidr(cidr: string): boolean {
  const [address = ''] = cidr.split('/');
  const network = networkOf(cidr).split('/')[0]!;
  return address.includes(':') ? ipv6ToBigInt(address) === ipv6ToBigInt(network) : address === network;
}

/** A CIDR body field: IPv4 or IPv6 with a prefix, and no host bits ("did you mean 10.1.2.0/24?"). */
export const networkCidr = () => Joi.string().ip({ version: ['ipv4', 'ipv6'], cidr: 'required' }).custom((value: string, helpers) => {
  if (isNetworkCidr(value)) return value;
  return helpers.message({ custom: `'${helpers.state.path?.join('.') || 'cidr'}' ${value} has host bits set: did you mean ${networkOf(value)}?` });
});
