// Discovery bench, issue 25 (`node --import tsx bench/discoveryL2.ts`; root only, else it says why):
// the lab of test/lab/l2.spec.ts (test/lab/lab.ts createLab + addL2: a simulated switch answering a
// community that is not `public`, snmpd with SNMPv3 and lldpd, a phone with a random MAC and an
// mDNS responder, a PTR resolver), segment A, from the agent's namespace (routes checked first):
//  1. our agent with SNMP, PTR and mDNS on (agent/main.ts through tsx: the single-file bundle does
//     not build while a dependency ships a native addon), read back through the server's API;
//  2. Debian's `nmap -sT -sV --dns-servers <the lab resolver>` (as root: ARP on the segment, so MACs
//     and nmap's own vendor table), read from its XML.
// Counted for each: hosts, names, vendors, random MACs flagged, SNMP system groups, L2 links
// (LLDP neighbours and forwarding-table placements); wall time and packets (nftables, agent namespace).
// Checked: both tools ran to their end (exit 0) and found lab hosts. BENCH_SMALL=1 (bench/small.ts)
// changes only where the results go (a temporary directory): the lab is its size, ~2 minutes of
// probing, so `npm run bench:small -- --lab` runs it and the default does not.
import fs from 'node:fs';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { ensureServices } from '../scripts/services.js';
import { prepareTemplate, releaseTestDatabases, startTestApp } from '../test/support/app.js';
import { createDaemonKey } from '../test/daemons/world.js';
import { call, expectOk } from '../test/support/client.js';
import { registerTenant } from '../test/support/world.js';
import { AGENT_IP, L2, NODE, ROOT, SEGMENT_A, addL2, createLab, labUnavailable, runInAgentNs, type Lab } from '../test/lab/lab.js';
import { BENCH_PACKAGES, LAB_PACKAGES, SNMP_PACKAGES, ensurePackages } from '../test/lab/packages.js';
import { mustAgree, resultsFile } from './small.js';

const TIMEOUT_MS = 600_000;

interface Known {
  hosts: number; names: number; namesBySource: Record<string, number>; vendors: number; randomFlagged: number;
  snmpSystems: number; lldpLinks: number; fdbPlacements: number;
}
interface Row { tool: string; exit: number | null; wallSeconds: number; packets: number; known: Known }


async function measure(lab: Lab, tool: string, cmd: string, args: string[], read: () => Promise<Known>): Promise<Row> {
  lab.exec(lab.agentNs, 'ip', ['neigh', 'flush', 'dev', 'ag0']);
  const before = lab.agentTraffic();
  const started = process.hrtime.bigint();
  const run = await runInAgentNs(lab, cmd, args, TIMEOUT_MS);
  const wallSeconds = Math.round((Number(process.hrtime.bigint() - started) / 1e9) * 10) / 10;
  const after = lab.agentTraffic();
  if (run.code !== 0) console.error(`${tool} exited ${run.code}:\n${run.output.slice(-3000)}`);
  return { tool, exit: run.code, wallSeconds, packets: after.packetsOut - before.packetsOut + after.packetsIn - before.packetsIn, known: await read() };
}

function readNmap(file: string): Known {
  const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (n) => ['host', 'address', 'hostname'].includes(n) }).parse(fs.readFileSync(file, 'utf8'));
  const up = (xml.nmaprun?.host ?? []).filter((h: any) => h.status?.state === 'up' && !h.address.some((a: any) => a.addr === AGENT_IP));
  const names = up.filter((h: any) => (h.hostnames?.hostname ?? []).some((n: any) => n.type === 'PTR'));
  return {
    hosts: up.length, names: names.length, namesBySource: { ptr: names.length },
    vendors: up.filter((h: any) => h.address.some((a: any) => a.addrtype === 'mac' && a.vendor)).length,
    randomFlagged: 0, snmpSystems: 0, lldpLinks: 0, fdbPlacements: 0,
  };
}

async function main() {
  const why = labUnavailable();
  if (why) return console.log(`discovery L2 bench skipped: ${why}`);
  ensurePackages([...LAB_PACKAGES, ...SNMP_PACKAGES, ...BENCH_PACKAGES]);
  const { databaseUrl, redisUrl } = await ensureServices();
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.NETINV_TEST_RUN ??= `bl${Date.now().toString(36)}`;
  await prepareTemplate();
  const stamp = new Date().toISOString();
  const lab = await createLab();
  const l2 = await addL2(lab);
  const app = await startTestApp({ userRateLimit: { capacity: 100_000, refillPerMinute: 600_000 } });
  const api = await lab.forward(Number(new URL(app.url).port));
  const rows: Row[] = [];
  try {
    const t = await registerTenant(app.url, 'bench-l2');
    const net = t.defaultNetworkId;
    const { key } = await createDaemonKey(app.url, t.owner, net);
    const get = async (p: string) => expectOk(await call(app.url, 'GET', p, { auth: t.owner }));
    rows.push(await measure(lab, 'agent (SNMP, PTR, mDNS)', NODE, ['--import', 'tsx', path.join(ROOT, 'agent/main.ts'), '--server', api.url, '--key', key,
      '--network', net, '--state', path.join(lab.dir, 'bench-state.json'), '--once', '--targets', SEGMENT_A, ...l2.agentArgs], async () => {
      const list = (await get(`/api/v1/hosts?network_id=${net}&limit=1000`)) as Array<{ id: string }>;
      const hosts = await Promise.all(list.map(({ id }) => get(`/api/v1/hosts/${id}`)));
      const inLab = hosts.filter((h: any) => h.ip_addresses.some((a: any) => a.ip_address.startsWith('198.18.10.') && a.ip_address !== AGENT_IP));
      const addresses = inLab.flatMap((h: any) => h.ip_addresses);
      const view = await get(`/api/v1/topology?network_id=${net}&view=l2`);
      const physical = view.edges.filter((e: any) => e.kind === 'physical_link');
      const namesBySource: Record<string, number> = {};
      for (const h of inLab) if (h.hostname) namesBySource[h.hostname_source ?? 'other'] = (namesBySource[h.hostname_source ?? 'other'] ?? 0) + 1;
      return {
        hosts: inLab.length, names: inLab.filter((h: any) => h.hostname).length, namesBySource,
        vendors: addresses.filter((a: any) => a.mac_vendor).length, randomFlagged: addresses.filter((a: any) => a.mac_random).length,
        snmpSystems: inLab.filter((h: any) => h.sys_descr).length,
        lldpLinks: physical.filter((e: any) => !e.evidence).length, fdbPlacements: physical.filter((e: any) => e.evidence === 'forwarding_table').length,
      };
    }));
    const xml = path.join(lab.dir, 'nmap-l2.xml');
    rows.push(await measure(lab, 'nmap -sT -sV', 'nmap', ['-sT', '-sV', '--dns-servers', L2.dns.ip, '-oX', xml, SEGMENT_A], async () => readNmap(xml)));
  } finally {
    await api.close();
    await app.close();
    await lab.destroy();
    await releaseTestDatabases();
  }
  const line = (label: string, f: (r: Row) => unknown) => `| ${label} | ${rows.map(f).join(' | ')} |`;
  console.log([`| ${SEGMENT_A} | ${rows.map((r) => r.tool).join(' | ')} |`, `|---|${rows.map(() => '---:').join('|')}|`,
    line('wall time (s)', (r) => r.wallSeconds), line('packets (out + in)', (r) => r.packets), line('hosts', (r) => r.known.hosts),
    line('hosts named', (r) => `${r.known.names} (${Object.entries(r.known.namesBySource).map(([k, v]) => `${k} ${v}`).join(', ')})`),
    line('addresses with a vendor', (r) => r.known.vendors), line('random MACs flagged', (r) => r.known.randomFlagged),
    line('SNMP system groups', (r) => r.known.snmpSystems), line('LLDP links', (r) => r.known.lldpLinks),
    line('hosts placed on switch ports', (r) => r.known.fdbPlacements)].join('\n'));
  const file = resultsFile(`discovery-l2-${stamp.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, `${JSON.stringify({ stamp, target: SEGMENT_A, rows }, null, 2)}\n`);
  console.log(`wrote ${file.pathname}`);
  for (const r of rows) mustAgree(`${r.tool} ran to its end and reached the lab`, r.exit === 0 && r.known.hosts > 0, `exit ${r.exit}, ${r.known.hosts} hosts`);
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
