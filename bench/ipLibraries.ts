// IP arithmetic libraries measured on the operations the server and the agent do: parse an IPv4
// address, test a CIDR's membership, list a /20's addresses, a CIDR's network and broadcast, and an
// IPv6 address's canonical (RFC 5952) form; plus what each adds to the agent's one-file bundle.
// `node --import tsx bench/ipLibraries.ts`. The candidates other than the one the project depends on
// are installed by npm into node_modules/.cache/ip-bench (once), not into the project.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = `${ROOT}node_modules/.cache/ip-bench/`;
/** cidr-tools 12 and later need Node 22: 11.3.2 is the newest the agent's Node 18 could run. */
const CANDIDATES = ['ipaddr.js@2.5.0', 'ip-address@10.7.6', 'ip-num@1.6.2', 'cidr-tools@11.3.2'];

function installCandidates(): void {
  const pkg = `${CACHE}package.json`;
  const wanted = JSON.stringify(CANDIDATES);
  if (fs.existsSync(`${CACHE}.installed`) && fs.readFileSync(`${CACHE}.installed`, 'utf8') === wanted) return;
  fs.mkdirSync(CACHE, { recursive: true });
  fs.writeFileSync(pkg, '{"private":true}\n');
  execFileSync('npm', ['install', '--no-audit', '--no-fund', ...CANDIDATES], { cwd: CACHE, stdio: 'inherit' });
  fs.writeFileSync(`${CACHE}.installed`, wanted);
}

/** Each candidate's way of doing the five operations; `source` is the same, as a bundle entry. */
interface Candidate {
  name: string;
  parse(ip: string): unknown;
  /** The CIDR parsed once (as the code does: a target, a subnet), then asked about many addresses. */
  within(cidr: string): (ip: string) => boolean;
  enumerate(cidr: string): string[];
  networkBroadcast(cidr: string): [string, string];
  canonical6(ip: string): string;
  source: string;
}

const V4 = ['198.18.10.7', '10.1.2.3', '192.168.200.254', '172.16.0.1'];
const V6 = ['2001:0DB8:0000:0000:0000:0000:0000:0001', 'fe80:0:0:0:1:0:0:2', '::ffff:10.0.0.1', '2001:db8:0:1:0:0:0:0'];

async function candidates(): Promise<Candidate[]> {
  const req = createRequire(CACHE);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const ipaddr = req('ipaddr.js') as any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const { Address4, Address6 } = req('ip-address') as any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const ipnum = req('ip-num') as any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const cidrTools = (await import(pathToFileURL(req.resolve('cidr-tools')).href)) as any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const ipBigint = (await import(pathToFileURL(req.resolve('ip-bigint')).href)) as any;
  const { ipv4ToNumber, numberToIPv4 } = await import('../agent/net/ip.js');
  // The agent's hand-written conversions as they were, for the first row.
  const ipToNumber = (ip: string) => {
    const parts = ip.split('.');
    if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) throw new Error(`not an IPv4 address: "${ip}"`);
    return parts.reduce((n, p) => n * 256 + Number(p), 0);
  };
  const numberToIp = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  return [
    {
      name: 'hand-written (before)',
      parse: (ip) => ipToNumber(ip),
      within: (cidr) => {
        const [a, p] = cidr.split('/');
        const mask = Number(p) === 0 ? 0 : (0xffffffff << (32 - Number(p))) >>> 0;
        const net = (ipToNumber(a!) & mask) >>> 0;
        return (ip) => ((ipToNumber(ip) & mask) >>> 0) === net;
      },
      enumerate: (cidr) => {
        const [a, p] = cidr.split('/');
        const n = ipToNumber(a!);
        const out: string[] = [];
        for (let i = n; i < n + 2 ** (32 - Number(p)); i++) out.push(numberToIp(i));
        return out;
      },
      networkBroadcast: (cidr) => {
        const [a, p] = cidr.split('/');
        const mask = (0xffffffff << (32 - Number(p))) >>> 0;
        const net = (ipToNumber(a!) & mask) >>> 0;
        return [numberToIp(net), numberToIp((net | ~mask) >>> 0)];
      },
      canonical6: () => '',
      source: '',
    },
    {
      name: 'ipaddr.js 2.5.0',
      parse: (ip) => ipaddr.IPv4.parse(ip),
      within: (cidr) => {
        const range = ipaddr.parseCIDR(cidr);
        return (ip) => ipaddr.parse(ip).match(range);
      },
      enumerate: (cidr) => {
        // ipaddr.js has no arithmetic on addresses: counted as agent/net/ip.ts does (a number, through Buffer).
        const [addr, prefix] = ipaddr.parseCIDR(cidr);
        const n = ipv4ToNumber(addr);
        const out: string[] = [];
        for (let i = n; i < n + 2 ** (32 - prefix); i++) out.push(numberToIPv4(i));
        return out;
      },
      networkBroadcast: (cidr) => [ipaddr.IPv4.networkAddressFromCIDR(cidr).toString(), ipaddr.IPv4.broadcastAddressFromCIDR(cidr).toString()],
      canonical6: (ip) => ipaddr.parse(ip).toString(),
      source: `const ipaddr = require('ipaddr.js');
        const [addr, prefix] = ipaddr.parseCIDR(process.argv[2]); const b = addr.toByteArray();
        console.log(ipaddr.parse(process.argv[3]).match([addr, prefix]), b, ipaddr.IPv4.networkAddressFromCIDR(process.argv[2]).toString(),
          ipaddr.IPv4.broadcastAddressFromCIDR(process.argv[2]).toString(), ipaddr.parse(process.argv[4]).toString());`,
    },
    {
      name: 'ip-address 10.7.6',
      parse: (ip) => new Address4(ip),
      within: (cidr) => {
        const net = new Address4(cidr);
        return (ip) => new Address4(ip).isInSubnet(net);
      },
      enumerate: (cidr) => {
        const net = new Address4(cidr);
        const first = Number(net.startAddress().bigInt());
        const last = Number(net.endAddress().bigInt());
        const out: string[] = [];
        for (let i = first; i <= last; i++) out.push(Address4.fromInteger(i).correctForm());
        return out;
      },
      networkBroadcast: (cidr) => {
        const net = new Address4(cidr);
        return [net.startAddress().correctForm(), net.endAddress().correctForm()];
      },
      canonical6: (ip) => new Address6(ip).correctForm(),
      source: `const { Address4, Address6 } = require('ip-address');
        const net = new Address4(process.argv[2]);
        console.log(new Address4(process.argv[3]).isInSubnet(net), Address4.fromInteger(Number(net.startAddress().bigInt())).correctForm(),
          net.endAddress().correctForm(), new Address6(process.argv[4]).correctForm());`,
    },
    {
      name: 'ip-num 1.6.2',
      parse: (ip) => ipnum.IPv4.fromDecimalDottedString(ip),
      within: (cidr) => {
        const range = ipnum.IPv4CidrRange.fromCidr(cidr);
        return (ip) => range.contains(new ipnum.IPv4CidrRange(ipnum.IPv4.fromDecimalDottedString(ip), new ipnum.IPv4Prefix(32n)));
      },
      enumerate: (cidr) => ipnum.IPv4CidrRange.fromCidr(cidr).take(BigInt(2 ** (32 - Number(cidr.split('/')[1])))).map((a: { toString(): string }) => a.toString()),
      networkBroadcast: (cidr) => {
        const r = ipnum.IPv4CidrRange.fromCidr(cidr);
        return [r.getFirst().toString(), r.getLast().toString()];
      },
      canonical6: (ip) => ipnum.collapseIPv6Number(ipnum.expandIPv6Number(ip)),
      source: `const ipnum = require('ip-num');
        const r = ipnum.IPv4CidrRange.fromCidr(process.argv[2]);
        console.log(r.contains(ipnum.IPv4.fromDecimalDottedString(process.argv[3])), r.take(4n).map(String), r.getFirst().toString(),
          r.getLast().toString(), ipnum.collapseIPv6Number(ipnum.expandIPv6Number(process.argv[4])));`,
    },
    {
      name: 'cidr-tools 11.3.2',
      parse: (ip) => cidrTools.parseCidr(ip),
      within: (cidr) => (ip) => cidrTools.containsCidr(cidr, ip),
      enumerate: (cidr) => [...cidrTools.expandCidr(cidr)] as string[],
      networkBroadcast: (cidr) => {
        const { start, end, version } = cidrTools.parseCidr(cidr);
        return [ipBigint.stringifyIp({ number: start, version }), ipBigint.stringifyIp({ number: end, version })];
      },
      canonical6: (ip) => cidrTools.normalizeCidr(ip),
      source: `import { containsCidr, expandCidr, normalizeCidr, parseCidr } from 'cidr-tools';
        console.log(containsCidr(process.argv[2], process.argv[3]), [...expandCidr(process.argv[2])].length, parseCidr(process.argv[2]).start,
          normalizeCidr(process.argv[4]));`,
    },
  ];
}

/** Calls per second of `fn`: the median of 5 windows of `ms` milliseconds (the machine is shared), after a warm-up. */
function opsPerSecond(fn: (i: number) => unknown, ms = 200): number {
  let sink: unknown;
  const run = (budget: number) => {
    let n = 0;
    const start = process.hrtime.bigint();
    const end = start + BigInt(budget) * 1_000_000n;
    let now = start;
    while (now < end) {
      for (let k = 0; k < 64; k++) sink = fn(n++);
      now = process.hrtime.bigint();
    }
    return n / (Number(now - start) / 1e9);
  };
  run(ms);
  const rate = Array.from({ length: 5 }, () => run(ms)).sort((x, y) => x - y)[2]!;
  if (sink === Symbol.for('never')) console.log(sink);
  return rate;
}

/** Bytes the candidate's code adds to a CommonJS, Node 18 bundle built as the agent's is (plain and minified+gzip). */
async function bundleBytes(source: string): Promise<{ plain: number; minGzip: number }> {
  if (!source) return { plain: 0, minGzip: 0 };
  const sizes = await Promise.all([false, true].map(async (minify) => {
    const result = await build({
      stdin: { contents: source, resolveDir: CACHE, loader: 'js' },
      write: false, bundle: true, platform: 'node', format: 'cjs', target: 'node18', minify, logLevel: 'error',
    });
    return Buffer.from(result.outputFiles[0]!.contents);
  }));
  return { plain: sizes[0]!.length, minGzip: zlib.gzipSync(sizes[1]!).length };
}

installCandidates();
const all = await candidates();
const reference = all[1]!;
const rows: string[] = [];
for (const c of all) {
  // Every candidate must give the same answers as the first library on the inputs measured.
  if (c !== all[0]) {
    for (const ip of V6) if (c.canonical6(ip).replace(/\/128$/, '') !== reference.canonical6(ip)) console.log(`  ${c.name}: ${ip} → ${c.canonical6(ip)} (ipaddr.js: ${reference.canonical6(ip)})`);
  }
  if (c.enumerate('198.18.16.0/20').length !== 4096) throw new Error(`${c.name}: a /20 is not 4096 addresses`);
  if (c.networkBroadcast('198.18.17.5/20').join(' ') !== '198.18.16.0 198.18.31.255') throw new Error(`${c.name}: network/broadcast ${c.networkBroadcast('198.18.17.5/20')}`);
  const inTarget = c.within('198.18.16.0/20');
  if (!inTarget('198.18.31.255') || inTarget('198.18.32.0')) throw new Error(`${c.name}: contains`);
  const parse = opsPerSecond((i) => c.parse(V4[i & 3]!));
  const contains = opsPerSecond((i) => inTarget(V4[i & 3]!));
  const enumerate = opsPerSecond(() => c.enumerate('198.18.16.0/20'), 400);
  const netBcast = opsPerSecond(() => c.networkBroadcast('198.18.17.5/20'));
  const canonical = c.source ? opsPerSecond((i) => c.canonical6(V6[i & 3]!)) : NaN;
  const size = await bundleBytes(c.source);
  const k = (n: number) => (Number.isNaN(n) ? '–' : n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e3).toFixed(1)} k`);
  rows.push(`| ${c.name} | ${k(parse)} | ${k(contains)} | ${enumerate.toFixed(0)} | ${k(netBcast)} | ${k(canonical)} | ${(size.plain / 1024).toFixed(1)} | ${(size.minGzip / 1024).toFixed(1)} |`);
  console.log(rows[rows.length - 1]);
}
console.log(`\nNode ${process.version}; ops/s (a /20 listed: lists/s); KiB added to a CommonJS node18 bundle, plain and minified+gzip\n`);
console.log('| library | parse v4 | CIDR contains | list a /20 | network + broadcast | IPv6 canonical | bundle KiB | min+gz KiB |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
