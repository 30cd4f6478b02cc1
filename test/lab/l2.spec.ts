// Issue 25 part 1 in the lab (test/lab/lab.ts addL2): SNMP through a community that is not `public`
// (the simulated switch) and through SNMPv3 (snmpd with lldpd's LLDP-MIB), LLDP links and
// forwarding-table placements drawn by the l2 view, a walk cut short that erases nothing, names
// from PTR, mDNS and sysName with their source, vendors and random MACs. Assertions on the server's
// API only. The agent runs only inside its namespace, after the route check. Root only: pending otherwise.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { createDaemonKey } from '../daemons/world.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { waitFor } from '../workers/support.js';
import { LAB_PACKAGES, SNMP_PACKAGES, ensurePackages } from './packages.js';
import { L2, L2_STRANGERS, NODE, ROOT, SEGMENT_A, addL2, createLab, labUnavailable, spawnInAgentNs, type L2Lab, type Lab, type LabHost } from './lab.js';

const AGENT_MAIN = path.join(ROOT, 'agent/main.ts');
const RUN_LIMIT_MS = 240_000;

interface HostDetail {
  id: string; name: string; hostname: string | null; hostname_source: string | null; description: string | null;
  sys_descr: string | null; sys_object_id: string | null; sys_location: string | null; chassis_id: string | null;
  ip_addresses: Array<{ id: string; ip_address: string; mac_address: string | null; mac_vendor: string | null; mac_random: boolean | null }>;
  interfaces: Array<{ if_index: number | null; name: string | null; fdb_macs?: string[] | null; lldp_sys_name?: string | null; lldp_chassis_id?: string | null }>;
}

describe('discovery lab, issue 25: SNMP, LLDP, names and vendors on the server', function () {
  this.timeout(RUN_LIMIT_MS * 3 + 120_000);
  let lab: Lab;
  let l2: L2Lab;
  let app: TestApp;
  let api: { url: string; close(): Promise<void> };
  let t: Tenant;
  const agents: ChildProcess[] = [];

  before(async function () {
    this.timeout(300_000);
    const why = labUnavailable();
    if (why) {
      console.log(`      pending: ${why}`);
      this.skip();
    }
    ensurePackages([...LAB_PACKAGES, ...SNMP_PACKAGES]);
    lab = await createLab();
    l2 = await addL2(lab);
    app = await startTestApp();
    api = await lab.forward(Number(new URL(app.url).port));
    t = await registerTenant(app.url, 'lab-l2');
  });
  after(async () => {
    for (const a of agents) a.kill('SIGKILL');
    await api?.close();
    await app?.close();
    await lab?.destroy();
  });

  /** One `--once` run of segment A with SNMP, PTR and mDNS on; the route check first. */
  async function runOnce(d: { args: string[] }): Promise<string> {
    const run = spawnInAgentNs(lab, NODE, ['--import', 'tsx', AGENT_MAIN, ...d.args, '--once', '--targets', SEGMENT_A, '--full-range-runs', '0', ...l2.agentArgs]);
    agents.push(run.child);
    const limit = setTimeout(() => run.child.kill('SIGKILL'), RUN_LIMIT_MS);
    const { code } = await run.exited.finally(() => clearTimeout(limit));
    expect(code, `agent exit ${code}:\n${run.output().slice(-3000)}`).to.equal(0);
    return run.output();
  }

  async function newDaemon(label: string) {
    const networkId = await createNetwork(app.url, t.owner, `${label} ${Math.random().toString(36).slice(2, 6)}`);
    const { key } = await createDaemonKey(app.url, t.owner, networkId);
    return { networkId, args: ['--server', api.url, '--key', key, '--network', networkId, '--state', path.join(lab.dir, `state-${networkId}.json`), '--name', `lab-${label}`] };
  }

  const get = async (p: string) => expectOk(await call(app.url, 'GET', p, { auth: t.owner }));
  /** Every host of the network with its detail, by address. */
  async function hostsByIp(networkId: string): Promise<Map<string, HostDetail>> {
    const list = (await get(`/api/v1/hosts?network_id=${networkId}&limit=1000`)) as Array<{ id: string }>;
    const out = new Map<string, HostDetail>();
    for (const { id } of list) {
      const h = (await get(`/api/v1/hosts/${id}`)) as HostDetail;
      for (const a of h.ip_addresses) out.set(a.ip_address, h);
    }
    return out;
  }
  /** The last Network session's report. */
  async function lastReport(networkId: string): Promise<{ incomplete: string[]; alive_by_evidence: Record<string, number> }> {
    const daemonId = await waitFor('the daemon', async () => ((await get(`/api/v1/daemons?network_id=${networkId}`)) as Array<{ id: string }>)[0]?.id);
    const sessions = (await get(`/api/v1/daemons/${daemonId}/sessions`)) as Array<{ discovery_type: { type: string }; report: any; created_at: string }>;
    return sessions.filter((s) => s.discovery_type.type === 'Network').sort((a, b) => b.created_at.localeCompare(a.created_at))[0]!.report;
  }
  /** The l2 view's physical links as `host:port — host:port` (sorted), with their evidence. */
  async function links(networkId: string): Promise<string[]> {
    const view = await get(`/api/v1/topology?network_id=${networkId}&view=l2`);
    const nodes = new Map<string, any>(view.nodes.map((n: any) => [n.id, n]));
    const name = (id: string) => `${nodes.get(nodes.get(id).parent_id).label}:${nodes.get(id).label}`;
    return view.edges.filter((e: any) => e.kind === 'physical_link')
      .map((e: any) => `${[name(e.source), name(e.target)].sort().join(' — ')}${e.evidence ? ` (${e.evidence})` : ''}`).sort();
  }
  const labHost = (name: string): LabHost => lab.hosts.find((h) => h.name === name)!;

  describe('one run of segment A', () => {
    let networkId: string;
    let hosts: Map<string, HostDetail>;

    before(async () => {
      const d = await newDaemon('l2');
      networkId = d.networkId;
      await runOnce(d);
      hosts = await hostsByIp(networkId);
    });

    it('SNMP through a community that is not `public`: the simulated switch\'s system group and ports, named by sysName', () => {
      const sw = hosts.get(L2.switch.ip)!;
      expect(sw, 'the switch').to.exist;
      expect(sw).to.include({ sys_descr: 'Lab simulated switch (net-snmp agent)', sys_location: 'lab rack 1', hostname: L2.switch.name, hostname_source: 'snmp' });
      expect(sw.chassis_id?.toUpperCase()).to.equal(L2.switch.mac.toUpperCase());
      expect(sw.interfaces.map((i) => i.if_index).sort()).to.deep.equal([1, 2, 3, 4]);
    });

    it('SNMP through v3 (authPriv): snmpd\'s system group and its LLDP neighbours from lldpd (AgentX)', () => {
      const h = hosts.get(L2.snmpd.ip)!;
      expect(h.sys_descr).to.match(/^Linux /);
      expect(h).to.include({ hostname: L2.snmpd.name, hostname_source: 'snmp', sys_location: 'lab segment A' });
      const eth0 = h.interfaces.find((i) => i.name === 'eth0' || i.lldp_sys_name);
      expect(eth0?.lldp_sys_name).to.be.oneOf(['web', 'redis']);
    });

    it('every LLDP link is an edge of the l2 view, and hosts sit on the ports the forwarding table says', async () => {
      const drawn = await links(networkId);
      const nameOf = (ip: string) => hosts.get(ip)!.name;
      const sw = L2.switch.name;
      const web = nameOf(labHost('web').ip);
      const snmpd = nameOf(L2.snmpd.ip);
      // LLDP links carry no evidence word (forwarding-table ones say so); each pair once.
      const lldp = (a: string, b: string) => drawn.filter((l) => !l.includes('(') && l.includes(a) && l.includes(`${b}:`));
      expect(lldp(`${sw}:ge-0/0/1`, web), drawn.join('\n')).to.have.length(1);
      expect(lldp(`${sw}:ge-0/0/2`, snmpd), drawn.join('\n')).to.have.length(1);
      // snmpd's own LLDP neighbour (lldpd on web or redis, through AgentX) joined to it.
      const snmpdNeighbour = hosts.get(L2.snmpd.ip)!.interfaces.find((i) => i.lldp_sys_name)!.lldp_sys_name!;
      expect(lldp(`${snmpd}:`, nameOf(labHost(snmpdNeighbour).ip)), drawn.join('\n')).to.have.length(1);
      console.log(`      l2 links:\n        ${drawn.join('\n        ')}`);
      // Forwarding table: redis and the printer on ge-0/0/3, quiet-a and the phone behind the uplink ge-0/0/4.
      for (const [who, port] of [[labHost('redis').ip, 'ge-0/0/3'], [labHost('printer').ip, 'ge-0/0/3'], [labHost('quiet-a').ip, 'ge-0/0/4'], [L2.phone.ip, 'ge-0/0/4']] as const) {
        expect(drawn.some((l) => l.includes(`${sw}:${port}`) && l.includes(`${nameOf(who)}:`) && l.endsWith('(forwarding_table)')), `${who} on ${port}:\n${drawn.join('\n')}`).to.equal(true);
      }
    });

    it('names with their source: PTR from the lab resolver, mDNS from the phone, sysName', () => {
      expect(hosts.get(labHost('web').ip)).to.include({ hostname: 'web.lab.example', hostname_source: 'ptr' });
      expect(hosts.get(L2.phone.ip)).to.include({ hostname: L2.phone.mdnsName, hostname_source: 'mdns' });
      expect(hosts.get(labHost('redis').ip)!.hostname_source).to.equal(null); // no record anywhere: no name invented
    });

    it('vendors from MACs; the phone\'s random MAC flagged with no vendor; a host known only from the switch\'s ARP table', () => {
      const address = (ip: string) => hosts.get(ip)!.ip_addresses.find((a) => a.ip_address === ip)!;
      expect(address(labHost('web').ip)).to.include({ mac_vendor: 'Intel Corporate', mac_random: false });
      expect(address(L2.phone.ip)).to.include({ mac_address: L2.phone.mac.toUpperCase(), mac_vendor: null, mac_random: true });
      expect(address(L2.arpOnly.ip)).to.include({ mac_address: L2.arpOnly.mac.toUpperCase(), mac_vendor: 'Intel Corporate' });
      expect(hosts.get(L2.arpOnly.ip)!.description).to.include(`the ARP table of ${L2.switch.ip}`);
      expect([...hosts.keys()].filter((ip) => !ip.startsWith('198.18.10.'))).to.deep.equal([]); // the switch's ARP row outside the targets: never a host
    });

    it('the run report: SNMP answers counted, nothing left incomplete', async () => {
      const report = await lastReport(networkId);
      expect(report.incomplete).to.deep.equal([]);
      expect(report.alive_by_evidence.snmp_arp).to.equal(1);
    });
  });

  it('a walk cut short (the switch goes silent mid-walk) leaves what is stored intact, and the run report names device and table', async () => {
    const d = await newDaemon('l2-cut');
    await l2.restartSwitch({ stopAfter: undefined });
    await runOnce(d);
    const before = (await hostsByIp(d.networkId)).get(L2.switch.ip)!;
    expect(before.interfaces).to.have.length(4);
    expect(before.interfaces.find((i) => i.if_index === 4)!.fdb_macs).to.have.length(3 + L2_STRANGERS.length);
    const placedBefore = (await links(d.networkId)).filter((l) => l.includes(`${L2.switch.name}:`));
    try {
      // The agent's system GET, LLDP GET, ifTable, ifXTable, ARP, the bridge ports and 3 GETBULKs of
      // dot1qTpFdbTable (as test/agent/snmp.spec.ts counts them); then silence.
      await l2.restartSwitch({ stopAfter: 12 });
      await runOnce(d);
    } finally {
      await l2.restartSwitch({ stopAfter: undefined });
    }
    const report = await lastReport(d.networkId);
    // Cut inside the forwarding table: the uplink's MACs read so far were sent as a partial table (added, nothing erased).
    expect(report.incomplete.join('\n')).to.match(new RegExp(`^${L2.switch.ip.replace(/\./g, '\\.')} fdb: dot1qTpFdbTable \\(`, 'm'));
    const after = (await hostsByIp(d.networkId)).get(L2.switch.ip)!;
    expect(after.interfaces.map((i) => [i.if_index, i.name, i.fdb_macs?.length ?? 0])).to.deep.equal(before.interfaces.map((i) => [i.if_index, i.name, i.fdb_macs?.length ?? 0]));
    expect((await links(d.networkId)).filter((l) => l.includes(`${L2.switch.name}:`))).to.deep.equal(placedBefore);
  });
});
