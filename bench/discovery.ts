// Discovery bench (issue 24; last part of `npm run bench`, or `node --import tsx bench/discovery.ts`).
// Root only (network namespaces): elsewhere it says why and exits 0.
// In the lab of test/lab/lab.ts (two segments, a router, eight hosts with real services, a
// middlebox range), side by side in one run on the same targets (198.18.10.0/24 and
// 198.18.20.0/24), both from the agent's namespace, whose only routes lead to the lab:
//  1. our agent, its downloadable single file (`node dist/downloads/netinventory-agent.cjs --once
//     --targets …`) with its default budget, reporting to a server in this process; its results
//     read back through the API;
//  2. Debian's `nmap -sT -sV` (installed for the bench only, never bundled), read from its XML.
// For each: wall time, hosts found against the lab's truth (and phantoms), services correctly
// identified (http, redis, ssh, postgresql at their address and port), packets both ways counted
// by nftables in the agent's namespace (ARP is not IP: not counted, for either), packets to
// 9100–9107 (printers print what they receive). The agent's neighbour table is flushed before each.
// DISCOVERY_AGENT_ARGS adds agent flags (e.g. "--pps 1000"); DISCOVERY_TIMEOUT_S bounds each tool (600);
// DISCOVERY_TARGETS (both /24s) the ranges both tools scan, scored against the lab hosts inside them.
// Checked (full and small runs): both tools ran to their end (exit 0) and found lab hosts (a tool
// that reached nothing measured nothing).
// BENCH_SMALL=1 (bench/small.ts): the first /28 of each segment (the routers and 5 of the 8 hosts);
// results in a temporary directory. Still ~2.5 minutes (each tool's own probing and timers, not the
// number of addresses, set its time): `npm run bench:small -- --lab` runs it, the default does not.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { XMLParser } from 'fast-xml-parser';
import { buildAgentArtifacts } from '../scripts/build.js';
import { ensureServices } from '../scripts/services.js';
import { prepareTemplate, releaseTestDatabases, startTestApp } from '../test/support/app.js';
import { createDaemonKey } from '../test/daemons/world.js';
import { registerTenant } from '../test/support/world.js';
import { AGENT_IP, cidrInside, createLab, labUnavailable, MIDDLEBOX_RANGE, NODE, ROOT, SEGMENT_A, SEGMENT_B, runInAgentNs, type Lab } from '../test/lab/lab.js';
import { labTruth, readInventory, sameKind } from '../test/lab/inventory.js';
import { BENCH_PACKAGES, ensurePackages, LAB_PACKAGES } from '../test/lab/packages.js';
import { mustAgree, resultsFile, sized, sizedText } from './small.js';

const TARGETS = sizedText('DISCOVERY_TARGETS', `${SEGMENT_A},${SEGMENT_B}`, '198.18.10.0/28,198.18.20.0/28').split(',');
const TIMEOUT_MS = sized('DISCOVERY_TIMEOUT_S', 600, 120) * 1000;
/** The lab's truth inside the targets (the whole lab at the default targets). */
const truthInTargets = (lab: Lab) => {
  const truth = labTruth(lab);
  const inside = (ip: string) => TARGETS.some((t) => cidrInside(ip, t));
  return { hosts: truth.hosts.filter(inside), services: truth.services.filter((x) => inside(x.ip)) };
};
/** Usable addresses of the targets. */
const ADDRESSES = TARGETS.reduce((n, t) => n + 2 ** (32 - Number(t.split('/')[1])) - 2, 0);
const EXTRA_AGENT_ARGS = (process.env.DISCOVERY_AGENT_ARGS ?? '').split(' ').filter(Boolean);

/** What one tool found, as scored against the lab's truth. */
interface Found { hosts: string[]; services: Array<{ ip: string; port: number; name: string }> }
interface ToolResult {
  tool: string;
  command: string;
  exit: number | null;
  wallSeconds: number;
  hostsFound: number;
  hostsMissed: string[];
  phantoms: string[];
  phantomsInMiddleboxRange: number;
  servicesCorrect: number;
  servicesMissed: string[];
  servicesClaimed: Array<{ ip: string; port: number; name: string }>;
  packets: { out: number; in: number; total: number; perAddress: number; perHostFound: number };
  packetsTo9100to9107: number;
}


/** One tool's run: the neighbour table emptied first, counters read around it. */
async function measure(lab: Lab, tool: string, cmd: string, args: string[], read: () => Promise<Found>, env?: Record<string, string>): Promise<ToolResult> {
  lab.exec(lab.agentNs, 'ip', ['neigh', 'flush', 'dev', 'ag0']);
  const traffic = lab.agentTraffic();
  const raw = lab.rawPortPackets();
  const started = process.hrtime.bigint();
  const run = await runInAgentNs(lab, cmd, args, TIMEOUT_MS, env);
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const after = lab.agentTraffic();
  if (run.code !== 0) console.error(`${tool} exited ${run.code}:\n${run.output.slice(-3000)}`);
  const found = await read();
  const truth = truthInTargets(lab);
  const hosts = found.hosts.filter((ip) => ip !== AGENT_IP); // the scanner itself is neither found nor a phantom
  const correct = truth.services.filter((s) => found.services.some((f) => f.ip === s.ip && f.port === s.port && sameKind(s.kind, f.name)));
  const out = after.packetsOut - traffic.packetsOut;
  const inn = after.packetsIn - traffic.packetsIn;
  const addresses = ADDRESSES;
  return {
    tool,
    command: [path.basename(cmd), ...args].join(' '), // the agent's key is in its environment (AGENT_KEY), never here
    exit: run.code,
    wallSeconds: Math.round(wallSeconds * 10) / 10,
    hostsFound: hosts.filter((ip) => truth.hosts.includes(ip)).length,
    hostsMissed: truth.hosts.filter((ip) => !hosts.includes(ip)),
    phantoms: hosts.filter((ip) => !truth.hosts.includes(ip)),
    phantomsInMiddleboxRange: hosts.filter((ip) => cidrInside(ip, MIDDLEBOX_RANGE)).length,
    servicesCorrect: correct.length,
    servicesMissed: truth.services.filter((s) => !correct.includes(s)).map((s) => `${s.kind} ${s.ip}:${s.port}`),
    servicesClaimed: found.services.filter((f) => f.ip !== AGENT_IP),
    packets: { out, in: inn, total: out + inn, perAddress: Math.round(((out + inn) / addresses) * 10) / 10, perHostFound: hosts.length ? Math.round((out + inn) / hosts.length) : 0 },
    packetsTo9100to9107: lab.rawPortPackets() - raw,
  };
}

/** nmap's XML: hosts up, and open ports whose service nmap named (by probe, or by port number). */
function readNmapXml(file: string): Found {
  const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => ['host', 'port', 'address'].includes(name) }).parse(fs.readFileSync(file, 'utf8'));
  const found: Found = { hosts: [], services: [] };
  for (const host of xml.nmaprun?.host ?? []) {
    if (host.status?.state !== 'up') continue;
    const ip = (host.address as Array<{ addr: string; addrtype: string }>).find((a) => a.addrtype === 'ipv4')!.addr;
    found.hosts.push(ip);
    for (const port of host.ports?.port ?? []) {
      if (port.state?.state !== 'open' || !port.service?.name) continue;
      // A name from nmap's port table only ("method=table", e.g. jetdirect on 9100) is a guess, not an identification.
      if (port.service.method !== 'probed' || port.service.name === 'tcpwrapped') continue;
      found.services.push({ ip, port: Number(port.portid), name: port.service.name });
    }
  }
  return found;
}

const table = (results: ToolResult[]) => {
  const r0 = results[0]!;
  const rows = [
    ['wall time (s)', (r: ToolResult) => r.wallSeconds],
    [`hosts found (of ${r0.hostsFound + r0.hostsMissed.length})`, (r: ToolResult) => r.hostsFound],
    ['phantom hosts', (r: ToolResult) => r.phantoms.length],
    [`services identified (of ${r0.servicesCorrect + r0.servicesMissed.length})`, (r: ToolResult) => r.servicesCorrect],
    ['packets (out + in)', (r: ToolResult) => r.packets.total],
    ['packets per address', (r: ToolResult) => r.packets.perAddress],
    ['packets per host found', (r: ToolResult) => r.packets.perHostFound],
    ['packets to 9100-9107', (r: ToolResult) => r.packetsTo9100to9107],
  ] as const;
  return [`| | ${results.map((r) => r.tool).join(' | ')} |`, `|---|${results.map(() => '---:').join('|')}|`,
    ...rows.map(([label, value]) => `| ${label} | ${results.map(value).join(' | ')} |`)].join('\n');
};

async function main() {
  const why = labUnavailable();
  if (why) {
    console.log(`discovery bench skipped: ${why}`);
    return;
  }
  ensurePackages([...LAB_PACKAGES, ...BENCH_PACKAGES]);
  const { databaseUrl, redisUrl } = await ensureServices();
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.NETINV_TEST_RUN ??= `bd${Date.now().toString(36)}`;
  await Promise.all([prepareTemplate(), buildAgentArtifacts()]);
  const stamp = new Date().toISOString();
  const nmapVersion = (await new Promise<string>((resolve) => {
    const c = spawn('nmap', ['--version']);
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.on('close', () => resolve(out.split('\n')[0]!.trim()));
  }));
  console.log(`netinventory discovery bench ${stamp}: ${os.cpus().length} CPUs, node ${process.version}, ${nmapVersion}`);

  const lab = await createLab();
  const app = await startTestApp({ userRateLimit: { capacity: 100_000, refillPerMinute: 600_000 } });
  const api = await lab.forward(Number(new URL(app.url).port));
  const results: ToolResult[] = [];
  try {
    const t = await registerTenant(app.url, 'bench');
    const { key } = await createDaemonKey(app.url, t.owner, t.defaultNetworkId);
    // The key as AGENT_KEY: an argument would show it in the process list (and in the results' command).
    const agentArgs = [path.join(ROOT, 'dist/downloads/netinventory-agent.cjs'), '--server', api.url, '--network', t.defaultNetworkId,
      '--state', path.join(lab.dir, 'agent-state.json'), '--once', '--targets', TARGETS.join(','), ...EXTRA_AGENT_ARGS];
    results.push(await measure(lab, 'agent', NODE, agentArgs, async () => {
      const seen = await readInventory(app.url, t.owner, t.defaultNetworkId);
      return {
        hosts: [...seen.keys()],
        services: [...seen.values()].flatMap((h) => h.services.flatMap((s) => (s.port === null ? [] : [{ ip: h.ip, port: s.port, name: s.definition }]))),
      };
    }, { AGENT_KEY: key }));
    const xml = path.join(lab.dir, 'nmap.xml');
    results.push(await measure(lab, 'nmap -sT -sV', 'nmap', ['-sT', '-sV', '-oX', xml, ...TARGETS], async () => readNmapXml(xml)));
  } finally {
    await api.close();
    await app.close();
    await lab.destroy();
    await releaseTestDatabases();
  }

  console.log(table(results));
  for (const r of results) {
    console.log(`${r.tool}: missed hosts ${r.hostsMissed.join(', ') || 'none'}; phantoms ${r.phantoms.length} (${r.phantomsInMiddleboxRange} in ${MIDDLEBOX_RANGE}); `
      + `services missed ${r.servicesMissed.join(', ') || 'none'}; claimed ${r.servicesClaimed.map((s) => `${s.name}@${s.ip}:${s.port}`).join(' ')}`);
  }
  const [agent, nmap] = results as [ToolResult, ToolResult];
  for (const r of results) mustAgree(`${r.tool} ran to its end and reached the lab`, r.exit === 0 && r.hostsFound > 0, `exit ${r.exit}, ${r.hostsFound} hosts found`);
  const targets = {
    sameHostsAsNmap: agent.hostsMissed.length <= nmap.hostsMissed.length && agent.phantoms.length <= nmap.phantoms.length,
    atLeastAsManyServices: agent.servicesCorrect >= nmap.servicesCorrect,
    noSlower: agent.wallSeconds <= nmap.wallSeconds,
  };
  console.log(`targets: ${Object.entries(targets).map(([k, v]) => `${k} ${v ? 'met' : 'NOT met'}`).join(', ')}`);
  const file = fileURLToPath(resultsFile(`discovery-${stamp.replace(/[:.]/g, '-')}.json`));
  fs.writeFileSync(file, `${JSON.stringify({ stamp, machine: { cpus: os.cpus().length, node: process.version, nmap: nmapVersion }, targets: TARGETS, agentArgs: EXTRA_AGENT_ARGS, results, goals: targets }, null, 2)}\n`);
  console.log(`wrote ${file}`);
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
