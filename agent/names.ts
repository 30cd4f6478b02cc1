// Host names: a PTR record from the resolver the operator named (--dns; never the system's
// resolver, which may sit outside the targets), and mDNS asked of the host itself: a one-shot
// unicast query to its UDP 5353 (RFC 6762 §5.1, §6.7) for its own reverse name. Unicast, so the only
// address ever sent to is a live host inside the targets (no multicast leaves the agent).
import { Resolver } from 'node:dns/promises';
import makeMdns from 'multicast-dns';

/** "c.b.a.d" reversed: the in-addr.arpa name of an IPv4 address. */
export const reverseName = (ip: string) => `${ip.split('.').reverse().join('.')}.in-addr.arpa`;

const clean = (name: string) => name.replace(/\.$/, '').slice(0, 1000);

export interface PtrOptions {
  /** The resolver, "ip" or "ip:port". */
  server: string;
  timeoutMs?: number;
}

/** A resolver bound to one server; `lookup(ip)` is the first PTR name or null (no record, no answer). */
export function ptrResolver(opts: PtrOptions): (ip: string) => Promise<string | null> {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 800, tries: 1 });
  resolver.setServers([opts.server]);
  return async (ip) => {
    try {
      // resolvePtr is a DNS query to the server; reverse() would answer from /etc/hosts first (seen: 127.0.0.1 → the machine's name)
      const names = await resolver.resolvePtr(reverseName(ip));
      return names[0] ? clean(names[0]) : null;
    } catch {
      return null;
    }
  };
}

export interface MdnsOptions {
  /** The host's mDNS port (5353; tests use a loopback port of their own). */
  port?: number;
  timeoutMs?: number;
}

/** Asks `ip` (unicast, UDP 5353) for the PTR of its own reverse name; its answer's name, or null. */
export function mdnsName(ip: string, opts: MdnsOptions = {}): Promise<string | null> {
  const question = reverseName(ip);
  return new Promise((resolve) => {
    const mdns = makeMdns({ multicast: false, port: 0, ip });
    let done = false;
    const finish = (name: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      mdns.destroy();
      resolve(name);
    };
    const timer = setTimeout(() => finish(null), opts.timeoutMs ?? 800);
    mdns.on('error', () => finish(null));
    mdns.on('warning', () => undefined);
    mdns.on('response', (packet, rinfo) => {
      if (rinfo.address !== ip) return; // only the host's own answer names it
      const answer = [...packet.answers, ...(packet.additionals ?? [])]
        .find((a) => a.type === 'PTR' && a.name.toLowerCase() === question);
      if (answer && answer.type === 'PTR' && answer.data) finish(clean(answer.data));
    });
    mdns.query({ questions: [{ name: question, type: 'PTR' }] }, { address: ip, port: opts.port ?? 5353 });
  });
}
