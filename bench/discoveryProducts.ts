// Products bench (`npm run bench:products`, or `node --import tsx bench/discoveryProducts.ts`). Root
// only (network namespaces): elsewhere it says why and exits 0.
// In the products lab (test/lab/products.ts: 28 hosts on 198.18.30.0/24, 68 services of real
// products, real Debian daemons and byte-faithful emulations), in one run, both from the agent's
// namespace (no default route; asserted before each tool starts):
//  1. our agent from source (`node --import tsx agent/main.ts --once --targets 198.18.30.0/24
//     --full-range-runs 0`), reporting to a test server in this process; its inventory read back
//     through the API;
//  2. Debian's `nmap -sT -sV -n` (installed for the bench only) on the same /24.
// Fairness: both probe the same TCP ports, the agent's light set (agent/scan/ports.ts LIGHT_PORTS,
// 105 ports, never 9100–9107): the agent with --full-range-runs 0 (no slice of the full range), nmap
// with -p set to that list. Lab ports outside it (7000 AirPlay, 8096 Jellyfin, 8728 RouterOS API,
// 9100 raw printing) are seen by neither. -n: nmap asks no DNS resolver (there is none in the lab).
// Scored against PRODUCT_TRUTH: services identified (the agent: "<definition> <name>"; nmap: "<service
// name> <product>" of a probed match, never a port-table guess) / identifiable, hosts found, phantoms,
// wall time, packets both ways (nftables counters in the agent's namespace; ARP is not IP: not counted),
// packets to 9100–9107. Then `--explain` of every host where the agent missed a service (the JSON's
// agentExplain). PRODUCTS_EXPLAIN=0 skips that; PRODUCTS_TIMEOUT_S bounds each tool (600).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { LIGHT_PORTS } from '../agent/scan/ports.js';
import { ensureServices } from '../scripts/services.js';
import { prepareTemplate, releaseTestDatabases, startTestApp } from '../test/support/app.js';
import { createDaemonKey } from '../test/daemons/world.js';
import { registerTenant } from '../test/support/world.js';
import { labUnavailable, NODE, ROOT } from '../test/lab/lab.js';
import { readInventory } from '../test/lab/inventory.js';
import { BENCH_PACKAGES, ensurePackages, LAB_PACKAGES } from '../test/lab/packages.js';
import {
  createProductsLab, PRODUCT_HOSTS, PRODUCT_PORTS, PRODUCT_TRUTH, PRODUCTS_SUBNET, productTable, scoreProducts,
  type NamedService, type ProductScore, type ProductsLab,
} from '../test/lab/products.js';

const TIMEOUT_MS = Number(process.env.PRODUCTS_TIMEOUT_S ?? 600) * 1000;
const EXPLAIN = process.env.PRODUCTS_EXPLAIN !== '0';
const AGENT_MAIN = path.join(ROOT, 'agent/main.ts');
const PORTS = [...LIGHT_PORTS].filter((p) => p < 9100 || p > 9107).sort((a, b) => a - b);

interface ToolResult {
  tool: string;
  command: string;
  exit: number | null;
  wallSeconds: number;
  score: ProductScore;
  packets: { out: number; in: number; total: number };
  packetsTo9100to9107: number;
  loadavgBefore: string;
  loadavgAfter: string;
}

const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').trim();

async function measure(lab: ProductsLab, tool: string, cmd: string, args: string[], read: () => Promise<{ hosts: string[]; services: NamedService[] }>, env?: Record<string, string>): Promise<ToolResult> {
  lab.exec(lab.agentNs, 'ip', ['neigh', 'flush', 'dev', 'ag0']);
  const traffic = lab.agentTraffic();
  const raw = lab.rawPortPackets();
  const loadavgBefore = loadavg();
  const started = process.hrtime.bigint();
  const run = lab.spawnInAgentNs(cmd, args, env);
  const timer = setTimeout(() => run.child.kill('SIGKILL'), TIMEOUT_MS);
  const { code } = await run.exited.finally(() => clearTimeout(timer));
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const after = lab.agentTraffic();
  if (code !== 0) console.error(`${tool} exited ${code}:\n${run.output().slice(-3000)}`);
  const found = await read();
  const out = after.packetsOut - traffic.packetsOut;
  const inn = after.packetsIn - traffic.packetsIn;
  return {
    tool, command: [path.basename(cmd), ...args].join(' '), exit: code, wallSeconds: Math.round(wallSeconds * 10) / 10,
    score: scoreProducts(found.hosts, found.services), packets: { out, in: inn, total: out + inn },
    packetsTo9100to9107: lab.rawPortPackets() - raw, loadavgBefore, loadavgAfter: loadavg(),
  };
}

/** nmap's XML: hosts up; each open port's service name + product (+ version, extra info) when probed (a port-table name is a guess). */
function readNmapXml(file: string): { hosts: string[]; services: NamedService[] } {
  const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => ['host', 'port', 'address'].includes(name) }).parse(fs.readFileSync(file, 'utf8'));
  const found = { hosts: [] as string[], services: [] as NamedService[] };
  for (const host of xml.nmaprun?.host ?? []) {
    if (host.status?.state !== 'up') continue;
    const ip = (host.address as Array<{ addr: string; addrtype: string }>).find((a) => a.addrtype === 'ipv4')!.addr;
    found.hosts.push(ip);
    for (const port of host.ports?.port ?? []) {
      const s = port.service;
      if (port.state?.state !== 'open' || !s?.name) continue;
      const name = [s.name, s.product, s.version, s.extrainfo, s.devicetype, s.ostype].filter(Boolean).join(' ');
      found.services.push({ ip, port: Number(port.portid), name, guess: s.method !== 'probed' || s.name === 'tcpwrapped' });
    }
  }
  return found;
}

const summary = (results: ToolResult[]) => {
  const identifiable = results[0]!.score.identifiable;
  const rows: Array<[string, (r: ToolResult) => string | number]> = [
    [`services identified (of ${identifiable} identifiable)`, (r: ToolResult) => r.score.identified],
    [`hosts found (of ${PRODUCT_HOSTS.length})`, (r: ToolResult) => r.score.hostsFound],
    ['phantom hosts', (r: ToolResult) => r.score.phantoms.length],
    ['wall time (s)', (r: ToolResult) => r.wallSeconds],
    ['packets (out + in)', (r: ToolResult) => r.packets.total],
    ['packets to 9100-9107', (r: ToolResult) => r.packetsTo9100to9107],
    ['load average before', (r: ToolResult) => r.loadavgBefore.split(' ').slice(0, 3).join(' ')],
  ];
  return [`| | ${results.map((r) => r.tool).join(' | ')} |`, `|---|${results.map(() => '---:').join('|')}|`,
    ...rows.map(([label, value]) => `| ${label} | ${results.map(value).join(' | ')} |`)].join('\n');
};

async function main() {
  const why = labUnavailable();
  if (why) {
    console.log(`products bench skipped: ${why}`);
    return;
  }
  ensurePackages([...LAB_PACKAGES, ...BENCH_PACKAGES]);
  const { databaseUrl, redisUrl } = await ensureServices();
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.NETINV_TEST_RUN ??= `bp${Date.now().toString(36)}`;
  process.env.LOG_LEVEL ??= 'silent';
  await prepareTemplate();
  const stamp = new Date().toISOString();
  // The agent measured: the commit, and whether agent/ had uncommitted changes (it is worked on in the same tree).
  const git = (args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
  const agentSource = { commit: git(['rev-parse', '--short', 'HEAD']), uncommittedInAgent: git(['status', '--porcelain', '--', 'agent']).split('\n').filter(Boolean) };
  const nmapVersion = spawnSync('nmap', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]!.trim();
  console.log(`netinventory products bench ${stamp}: ${os.cpus().length} CPUs, node ${process.version}, ${nmapVersion}, load ${loadavg()}; agent at ${agentSource.commit}${agentSource.uncommittedInAgent.length ? ` with ${agentSource.uncommittedInAgent.length} uncommitted files in agent/` : ''}`);

  const lab = await createProductsLab();
  const app = await startTestApp({ userRateLimit: { capacity: 100_000, refillPerMinute: 600_000 } });
  const api = await lab.forward(Number(new URL(app.url).port));
  const results: ToolResult[] = [];
  const agentExplain: Record<string, string> = {};
  try {
    lab.assertAgentIsolated();
    const t = await registerTenant(app.url, 'bench');
    const { key } = await createDaemonKey(app.url, t.owner, t.defaultNetworkId);
    const agentArgs = ['--import', 'tsx', AGENT_MAIN, '--server', api.url, '--network', t.defaultNetworkId, '--state', path.join(lab.dir, 'agent-state.json'),
      '--name', 'products-bench', '--once', '--targets', PRODUCTS_SUBNET, '--full-range-runs', '0'];
    results.push(await measure(lab, 'agent', NODE, agentArgs, async () => {
      const seen = await readInventory(app.url, t.owner, t.defaultNetworkId);
      return {
        hosts: [...seen.keys()],
        services: [...seen.values()].flatMap((h) => h.services.flatMap((s) => (s.port === null ? []
          : [{ ip: h.ip, port: s.port, name: `${s.definition} ${s.name}`, guess: /port number only/.test(s.source) }]))),
      };
    }, { AGENT_KEY: key }));
    const xml = path.join(lab.dir, 'nmap.xml');
    results.push(await measure(lab, 'nmap -sT -sV', 'nmap', ['-sT', '-sV', '-n', '-p', PORTS.join(','), '-oX', xml, PRODUCTS_SUBNET], async () => readNmapXml(xml)));

    if (EXPLAIN) {
      const missedHosts = [...new Set(results[0]!.score.rows.filter((r) => r.truth.identifiable && !r.ok).map((r) => r.truth.ip))];
      for (const ip of missedHosts) {
        const run = lab.spawnInAgentNs(NODE, ['--import', 'tsx', AGENT_MAIN, '--explain', ip]);
        await run.exited;
        agentExplain[ip] = run.output();
      }
    }
  } finally {
    await api.close();
    await app.close();
    await lab.destroy();
    await releaseTestDatabases();
  }

  console.log(productTable(results.map((r) => ({ tool: r.tool, score: r.score }))));
  console.log(`\n${summary(results)}\n`);
  for (const r of results) {
    console.log(`${r.tool}: ${r.score.identified}/${r.score.identifiable} identified; missed hosts ${r.score.hostsMissed.join(', ') || 'none'}; phantoms ${r.score.phantoms.join(', ') || 'none'}`);
  }
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  const file = path.join(ROOT, `bench/results/discovery-products-${stamp.replace(/[:.]/g, '-')}.json`);
  const serialise = (r: ToolResult) => ({ ...r, score: { ...r.score, rows: r.score.rows.map((row) => ({ ...row, truth: { ...row.truth, expect: String(row.truth.expect) } })) } });
  fs.writeFileSync(file, `${JSON.stringify({
    stamp, agentSource, machine: { cpus: os.cpus().length, node: process.version, nmap: nmapVersion }, subnet: PRODUCTS_SUBNET, ports: PORTS,
    labPortsNotProbed: PRODUCT_PORTS.filter((p) => !PORTS.includes(p)), services: PRODUCT_TRUTH.length, results: results.map(serialise), agentExplain,
  }, null, 2)}\n`);
  console.log(`wrote ${path.relative(ROOT, file)}`);
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
