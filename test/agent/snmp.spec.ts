// The agent's SNMP walks against the lab's simulated switch (net-snmp's agent) on loopback, a port of
// the test's own: credentials tried in turn, v2c and v3, IF-MIB, ARP, BRIDGE/Q-BRIDGE, LLDP; walks
// cut short; what the scanner and the host report make of it, checked against the server's schema.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parseConfig, UsageError } from '../../agent/config.js';
import { hostRequest, metadataEntry, networkDiscoveryType, redactDiscoveryType } from '../../agent/protocol/entities.js';
import { runScan, snmpCredentialsOn } from '../../agent/scan/scan.js';
import type { FoundHost } from '../../agent/scan/types.js';
import { collectSnmp } from '../../agent/snmp/collect.js';
import { credentialsFor, mergeCredentials, parseV3, type SnmpCredential } from '../../agent/snmp/credentials.js';
import { DEFAULT_LIMITS, indexOf, openSession, walk } from '../../agent/snmp/session.js';
import { macFromIndex } from '../../agent/snmp/values.js';
import { SECRET_MASK } from '../../src/core/secretFields.js';
import { daemonHostRequestBody } from '../../src/modules/discovery/schemas.js';
import { freeUdpPort, startSnmpSwitch, type RunningSwitch, type SwitchSpec } from '../lab/snmpSwitch.js';

const COMMUNITY = 'lab-not-public';
const V3: SnmpCredential = { version: 'v3', user: 'ops', auth: { protocol: 'sha', key: 'auth-pass-1' }, priv: { protocol: 'aes', key: 'priv-pass-1' } };
const WEB_MAC = '00:1B:21:0A:00:11';
const REDIS_MAC = '00:1B:21:0A:00:12';
const PRINTER_MAC = '00:1B:21:0A:00:13';

function spec(port: number, extra: Partial<SwitchSpec> = {}): SwitchSpec {
  return {
    address: '127.0.0.1', port, communities: [COMMUNITY], v3: [{ user: 'ops', authKey: 'auth-pass-1', privKey: 'priv-pass-1' }],
    sysName: 'lab-sw1', sysDescr: 'Lab switch', chassisMac: '00:1B:21:AA:00:01',
    ports: [
      { ifIndex: 1, name: 'ge-0/0/1', alias: 'to web', mac: '00:1B:21:AA:00:11', fdb: [WEB_MAC],
        lldp: { chassisMac: WEB_MAC, portId: 'eth0', portDesc: 'web eth0', sysName: 'web', mgmtAddr: '198.18.10.11' } },
      { ifIndex: 2, name: 'ge-0/0/2', mac: '00:1B:21:AA:00:12', fdb: [REDIS_MAC, PRINTER_MAC], speedMbps: 10_000 },
      { ifIndex: 3, name: 'ge-0/0/3', mac: '00:1B:21:AA:00:13', up: false },
    ],
    arp: [{ ifIndex: 1, ip: '127.31.0.1', mac: '00:1B:21:0A:00:40' }, { ifIndex: 1, ip: '198.18.99.9', mac: '00:1B:21:0A:00:41' }],
    fdbMib: 'qbridge',
    ...extra,
  };
}

const FAST = { timeoutMs: 300, retries: 0 };

describe('agent SNMP: the simulated switch on loopback', function () {
  this.timeout(30_000);
  let port: number;
  let sw: RunningSwitch | null = null;
  const start = async (extra: Partial<SwitchSpec> = {}) => {
    port = await freeUdpPort();
    sw = await startSnmpSwitch(spec(port, extra));
  };
  afterEach(async () => {
    await sw?.close();
    sw = null;
  });

  it('tries every credential until one answers: a wrong community first, then the right one', async () => {
    await start();
    const device = await collectSnmp('127.0.0.1', [{ version: 'v2c', community: 'public' }, { version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST } });
    expect(device?.credential).to.equal('v2c community');
    expect(device?.system).to.include({ name: 'lab-sw1', descr: 'Lab switch', location: 'lab rack 1', chassisId: '00:1B:21:AA:00:01' });
    expect(await collectSnmp('127.0.0.1', [{ version: 'v2c', community: 'public' }], { limits: { port, ...FAST } })).to.equal(null);
  });

  it('reads the same through SNMPv3 (authPriv SHA/AES); a wrong key gets nothing', async () => {
    await start({ communities: [] });
    const device = await collectSnmp('127.0.0.1', [V3], { limits: { port, ...FAST } });
    expect(device?.credential).to.equal('v3 user ops (authPriv)');
    expect(device?.interfaces.map((i) => i.name)).to.deep.equal(['ge-0/0/1', 'ge-0/0/2', 'ge-0/0/3']);
    const wrong = { ...V3, priv: { protocol: 'aes' as const, key: 'not-the-key' } };
    expect(await collectSnmp('127.0.0.1', [wrong], { limits: { port, ...FAST } })).to.equal(null);
  });

  it('IF-MIB rows; Q-BRIDGE forwarding through dot1dBasePortIfIndex; LLDP neighbours on the port their local number names', async () => {
    await start();
    const device = (await collectSnmp('127.0.0.1', [{ version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST } }))!;
    const [p1, p2, p3] = device.interfaces;
    expect(p1).to.deep.include({ ifIndex: 1, name: 'ge-0/0/1', alias: 'to web', mac: '00:1B:21:AA:00:11', adminStatus: 'Up', operStatus: 'Up', fdbMacs: [WEB_MAC] });
    expect(p1!.lldp).to.deep.equal({ chassisId: WEB_MAC, portId: 'eth0', portDesc: 'web eth0', sysName: 'web', sysDesc: null, mgmtAddr: '198.18.10.11' });
    expect(p2).to.deep.include({ ifIndex: 2, speedBps: 10_000_000_000, fdbMacs: [REDIS_MAC, PRINTER_MAC].sort(), lldp: null });
    expect(p3).to.deep.include({ ifIndex: 3, operStatus: 'Down' });
    expect(p3!.fdbMacs).to.equal(undefined);
    expect(device.interfaces).to.have.length(3); // the switch's own MAC (status self) is on no port
    expect(device.arp).to.deep.equal([{ ip: '127.31.0.1', mac: '00:1B:21:0A:00:40' }, { ip: '198.18.99.9', mac: '00:1B:21:0A:00:41' }]);
    expect(device.collections).to.deep.equal({ system: 'complete', if_table: 'complete', arp: 'complete', fdb: 'complete', lldp: 'complete' });
    expect(device.incomplete).to.deep.equal([]);
  });

  it('BRIDGE-MIB alone gives the same ports', async () => {
    await start({ fdbMib: 'bridge' });
    const device = (await collectSnmp('127.0.0.1', [{ version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST } }))!;
    expect(device.interfaces.map((i) => i.fdbMacs)).to.deep.equal([[WEB_MAC], [REDIS_MAC, PRINTER_MAC].sort(), undefined]);
  });

  // Issue 37: a switch lists its own MACs in its forwarding table (status self, or mgmt), on port 0 or on a
  // real port; on a port, one would place the switch on itself (a phantom link). The simulated switch lists
  // its base address (= chassis id, dot1dBaseBridgeAddress) self on port 1, an internal MAC of its own
  // (base + 1, in no other table) self on port 3, and port 3's own MAC mgmt on port 3.
  for (const fdbMib of ['qbridge', 'bridge'] as const) {
    it(`${fdbMib}: the switch's own MACs are on no port, whatever their status; an aged (invalid) entry neither; a static host (mgmt) is`, async () => {
      const STATIC = '00:80:77:0A:00:20';
      const AGED = '00:50:56:0A:00:21';
      const own = ['00:1B:21:AA:00:01', '00:1B:21:AA:00:02', '00:1B:21:AA:00:13'];
      await start({ fdbMib, ports: spec(0).ports.map((p) => (p.ifIndex === 2 ? { ...p, staticFdb: [STATIC], agedFdb: [AGED] } : p)) });
      // What the switch answers: its own MACs on real ports (else this test proves nothing).
      const table = fdbMib === 'bridge' ? '1.3.6.1.2.1.17.4.3.1' : '1.3.6.1.2.1.17.7.1.2.2.1';
      const session = openSession('127.0.0.1', { version: 'v2c', community: COMMUNITY }, { ...DEFAULT_LIMITS, port, ...FAST });
      const rows = new Map<string, Record<number, unknown>>();
      try {
        for (const v of (await walk(session, table, { ...DEFAULT_LIMITS, port, ...FAST })).rows) {
          const [column, ...index] = indexOf(v.oid, table)!;
          const mac = macFromIndex(fdbMib === 'bridge' ? index : index.slice(1))!;
          rows.set(mac, { ...rows.get(mac), [column!]: v.value });
        }
      } finally {
        session.close();
      }
      expect(own.map((m) => rows.get(m))).to.deep.equal([{ 2: 101, 3: 4 }, { 2: 103, 3: 4 }, { 2: 103, 3: 5 }]);
      expect([rows.get(STATIC), rows.get(AGED)]).to.deep.equal([{ 2: 102, 3: 5 }, { 2: 102, 3: 2 }]);

      const device = (await collectSnmp('127.0.0.1', [{ version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST } }))!;
      const onPorts = device.interfaces.flatMap((i) => (i.fdbMacs ?? []).map((mac) => `${i.name} ${mac}`));
      expect(onPorts).to.deep.equal([`ge-0/0/1 ${WEB_MAC}`, `ge-0/0/2 ${REDIS_MAC}`, `ge-0/0/2 ${PRINTER_MAC}`, `ge-0/0/2 ${STATIC}`]);
      expect(device.interfaces.map((i) => i.ifIndex)).to.deep.equal([1, 2, 3]);
      expect(device.collections.fdb).to.equal('complete');
    });
  }

  it('a device that stops answering mid-walk: what it sent is kept, the collections left are partial and named', async () => {
    await start({ stopAfter: 6 }); // the GET, the LLDP chassis GET, then a few GETBULKs
    const device = (await collectSnmp('127.0.0.1', [{ version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST } }))!;
    expect(device.system.name).to.equal('lab-sw1');
    expect(device.interfaces.length).to.be.greaterThan(0);
    expect(device.collections.system).to.equal('complete');
    expect(device.collections.lldp).to.equal('partial');
    expect(device.collections.fdb).to.equal('partial');
    expect(device.incomplete.join('\n')).to.match(/^127\.0\.0\.1 lldp: .*lldpRemTable/m);
    expect(sw!.requests()).to.be.lessThan(12); // not every walk waiting for its own timeout
  });

  // The table's port column is walked before its status column: a walk cut in the port column has no
  // status for any row (each may be the switch's own, self), one cut in the status column has it for the first rows.
  const cuts = [
    { stopAfter: 12, where: 'in the port column: no row kept (no status read)', uplink: [0, 0] },
    { stopAfter: 19, where: 'in the status column: the rows read whole kept', uplink: [1, 149] },
  ];
  for (const cut of cuts) {
    it(`silent in the middle of the forwarding table, ${cut.where}; partial, and nothing on port 0 or of the switch's own`, async () => {
      const strangers = Array.from({ length: 150 }, (_, i) => `00:50:56:01:00:${i.toString(16).padStart(2, '0')}`);
      const base = spec(0);
      // 9 requests before dot1qTpFdbTable (the system GET, the LLDP GET, ifTable, ifXTable, ARP, the bridge ports, dot1dTpFdbTable),
      // then 8 GETBULKs of its port column (156 rows: 20 a request).
      await start({ ports: [...base.ports, { ifIndex: 4, name: 'uplink', mac: '00:1B:21:AA:00:14', fdb: strangers }], stopAfter: cut.stopAfter });
      const device = (await collectSnmp('127.0.0.1', [{ version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST } }))!;
      expect(device.collections.fdb).to.equal('partial');
      // The switch's own (self on port 1 and on the uplink, the uplink's MAC mgmt on it) on none.
      expect(device.interfaces.flatMap((i) => (i.fdbMacs ?? []).map((m) => `${i.name} ${m}`)).filter((m) => m.includes('00:1B:21:AA:'))).to.deep.equal([]);
      const uplink = device.interfaces.find((i) => i.ifIndex === 4)!;
      expect(uplink.fdbMacs?.length ?? 0).to.be.within(cut.uplink[0]!, cut.uplink[1]!); // cut inside the table (else this test proves nothing)
      expect(device.interfaces.map((i) => i.ifIndex)).to.deep.equal([1, 2, 3, 4]);
      expect(device.incomplete.join('\n')).to.match(/^127\.0\.0\.1 fdb: dot1qTpFdbTable \(/m);
    });
  }

  it('a walk over its row cap is cut short and partial', async () => {
    await start();
    const device = (await collectSnmp('127.0.0.1', [{ version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST, walkRows: 5 } }))!;
    expect(device.collections.if_table).to.equal('partial');
    expect(device.incomplete.join('\n')).to.match(/ifTable \(over 5 rows\)/);
  });

  it('the scanner: a device target answering SNMP only, named by sysName; ARP hosts inside the targets found from its table alone', async () => {
    await start();
    const probed: string[] = [];
    const found: FoundHost[] = [];
    const report = await runScan({
      budget: { probesPerSecond: 500, maxOpenSockets: 8 },
      targets: [{ cidr: '127.0.0.1/32' }, { cidr: '127.31.0.0/30' }],
      snmp: { all: [{ version: 'v2c', community: 'public' }, { version: 'v2c', community: COMMUNITY }] },
      onHost: (h) => void found.push(h),
    }, { onLink: [], snmpLimits: { port, ...FAST }, sweep: async (ip) => (probed.push(ip), { evidence: [], open: [] }) });
    const device = report.hosts.find((h) => h.ip === '127.0.0.1')!;
    expect(device.evidence).to.deep.equal([{ kind: 'udp', port: 161 }]);
    expect(device).to.include({ hostname: 'lab-sw1', hostnameSource: 'snmp' });
    expect(device.snmp?.interfaces).to.have.length(3);
    const behind = report.hosts.find((h) => h.ip === '127.31.0.1')!;
    expect(behind.evidence).to.deep.equal([{ kind: 'snmp_arp', mac: '00:1B:21:0A:00:40', device: '127.0.0.1' }]);
    expect(behind).to.include({ mac: '00:1B:21:0A:00:40', macVendor: 'Intel Corporate', macIsRandom: false });
    expect(report.hosts.map((h) => h.ip)).to.not.include('198.18.99.9'); // outside the targets: never a host
    expect(probed).to.not.include('198.18.99.9');
    expect(probed.filter((ip) => ip === '127.0.0.1')).to.have.length(1); // liveness only: a device without evidence gets SNMP, not a port sweep
    expect(found.map((h) => h.ip)).to.have.members(['127.0.0.1', '127.31.0.1']);
  });

  it('a target with SNMP public on asks `public` after the given credentials, and a device answering it is read; off, nothing is asked', async () => {
    await start({ communities: ['public'] });
    const run = (snmpPublic: boolean) => runScan({
      budget: { probesPerSecond: 500, maxOpenSockets: 8 }, targets: [{ cidr: '127.0.0.1/32', snmpPublic }], snmp: { all: [{ version: 'v2c', community: COMMUNITY }] },
    }, { onLink: [], snmpLimits: { port, ...FAST }, sweep: async () => ({ evidence: [], open: [] }) });
    const on = (await run(true)).hosts.find((h) => h.ip === '127.0.0.1');
    expect(on?.snmp?.system.descr).to.equal('Lab switch');
    expect((await run(false)).hosts.find((h) => h.ip === '127.0.0.1')).to.equal(undefined);
    expect(snmpCredentialsOn({ cidr: '127.0.0.1/32', snmpPublic: true }, { snmp: { all: [{ version: 'v2c', community: 'public' }] } }, '127.0.0.1')).to.have.length(1); // never twice
  });

  it('a cut walk reaches the run report as an incomplete line naming device and table', async () => {
    await start({ stopAfter: 6 });
    const report = await runScan({
      budget: { probesPerSecond: 500, maxOpenSockets: 8 }, targets: [{ cidr: '127.0.0.1/32' }], snmp: { all: [{ version: 'v2c', community: COMMUNITY }] },
    }, { onLink: [], snmpLimits: { port, ...FAST }, sweep: async () => ({ evidence: [], open: [] }) });
    expect(report.incomplete?.join('\n')).to.match(/^127\.0\.0\.1 lldp: .*lldpRemTable/m);
  });

  it('the host report carries if_entries, collections and the system fields, and the server\'s schema accepts it whole', async () => {
    await start();
    const snmp = (await collectSnmp('127.0.0.1', [{ version: 'v2c', community: COMMUNITY }], { limits: { port, ...FAST } }))!;
    const found: FoundHost = {
      ip: '127.0.0.1', mac: '00:1B:21:AA:00:12', macVendor: 'Intel Corporate', macIsRandom: false, hostname: 'lab-sw1', hostnameSource: 'snmp',
      evidence: [{ kind: 'udp', port: 161 }], openPorts: [{ port: 161, protocol: 'Udp' }], services: [], snmp, target: { cidr: '127.0.0.1/32', subnetId: '5f0c9b1e-0a7e-4c1b-9a55-0d6f1c2e3a4b' },
    };
    const ctx = { networkId: '6a1e3c2b-1d4f-4a5b-8c7d-9e0f1a2b3c4d', daemonId: '0b9a8c7d-6e5f-4a3b-9c1d-2e3f4a5b6c7d', subnetId: found.target.subnetId!, discoveryType: networkDiscoveryType(null), date: '2026-11-25T10:00:00Z', description: null };
    const body = hostRequest(found, ctx);
    const { error, value } = daemonHostRequestBody.validate(body);
    expect(error?.message).to.equal(undefined);
    expect(value.host).to.include({ hostname: 'lab-sw1', hostname_source: 'snmp', sys_descr: 'Lab switch', sys_location: 'lab rack 1', chassis_id: '00:1B:21:AA:00:01' });
    expect(value.interfaces[0]).to.include({ mac_vendor: 'Intel Corporate', mac_random: false });
    expect(value.collections).to.deep.equal({ system: 'complete', if_table: 'complete', arp: 'complete', fdb: 'complete', lldp: 'complete' });
    const [e1, e2] = value.if_entries;
    expect(e1).to.include({ if_index: 1, if_name: 'ge-0/0/1', oper_status: 'Up', lldp_sys_name: 'web', lldp_chassis_id: WEB_MAC, lldp_port_id: 'eth0', lldp_mgmt_addr: '198.18.10.11', interface_id: null });
    expect(e1.fdb_macs).to.deep.equal([WEB_MAC]);
    expect(e2.interface_id).to.equal(body.interfaces[0]!.id); // the port whose MAC is the host's carries its address
    expect(value.if_entries[2]).to.include({ oper_status: 'Down' });
  });
});

describe('agent SNMP credentials', () => {
  it('the command line: communities and v3 users; a bad one is a usage error naming the flag', () => {
    const c = parseConfig(['--server', 'http://127.0.0.1:1', '--key', 'k', '--snmp-community', 'a,b', '--snmp-v3', 'ops:sha:authpass1:aes:privpass1,ro']);
    expect(c.snmp).to.deep.equal([
      { version: 'v2c', community: 'a' }, { version: 'v2c', community: 'b' },
      { version: 'v3', user: 'ops', auth: { protocol: 'sha', key: 'authpass1' }, priv: { protocol: 'aes', key: 'privpass1' } },
      { version: 'v3', user: 'ro' },
    ]);
    expect(() => parseConfig(['--server', 'http://127.0.0.1:1', '--key', 'k', '--snmp-v3', 'ops:sha1:authpass1'])).to.throw(UsageError, /auth protocol/);
    expect(() => parseConfig(['--server', 'http://127.0.0.1:1', '--key', 'k', '--snmp-v3', 'ops:sha:short'])).to.throw(UsageError, /8 characters/);
    expect(() => parseV3('ops:sha')).to.throw(/user\[:authproto/);
    expect(() => parseConfig(['--server', 'http://127.0.0.1:1', '--key', 'k', '--dns', 'resolver.example'])).to.throw(UsageError, /--dns/);
    expect(parseConfig(['--server', 'http://127.0.0.1:1', '--key', 'k', '--dns', '127.0.0.53:5353', '--mdns'])).to.include({ dns: '127.0.0.53:5353', mdns: true });
  });

  it('the server\'s snmp_credentials: the address\'s override first, then the default, then the command line; redacted ones skipped', () => {
    const merged = mergeCredentials({
      default_credential: { version: 'V2c', community: 'site' },
      ip_overrides: [{ ip: '198.18.10.50', credential: { version: 'V2c', community: 'core' } }, { ip: '198.18.10.51', credential: { version: 'V2c', community: '********' } },
        { ip: '198.18.10.52', credential: { version: 'V3', user: 'ops', auth_protocol: 'sha', auth_password: 'authpass1' } }],
    }, [{ version: 'v2c', community: 'cli' }]);
    expect(credentialsFor(merged, '198.18.10.50')).to.deep.equal([{ version: 'v2c', community: 'core' }, { version: 'v2c', community: 'site' }, { version: 'v2c', community: 'cli' }]);
    expect(credentialsFor(merged, '198.18.10.51')).to.deep.equal([{ version: 'v2c', community: 'site' }, { version: 'v2c', community: 'cli' }]);
    expect(credentialsFor(merged, '198.18.10.52')[0]).to.deep.equal({ version: 'v3', user: 'ops', auth: { protocol: 'sha', key: 'authpass1' } });
    expect(mergeCredentials({ default_credential: null, ip_overrides: [] }, [])).to.equal(undefined);
  });

  it('what the agent sends back (session updates, source metadata) has every secret masked; a masked v3 user is skipped, not tried with the mask', () => {
    const marks = { community: `c-${randomUUID()}`, auth: `a-${randomUUID()}`, priv: `p-${randomUUID()}`, oAuth: `oa-${randomUUID()}`, oPriv: `op-${randomUUID()}` };
    const v3 = (auth: string, priv: string) => ({ version: 'V3', user: 'ops', auth_protocol: 'sha', auth_password: auth, priv_protocol: 'aes', priv_password: priv });
    const dt = networkDiscoveryType(null, { snmp_credentials: {
      default_credential: v3(marks.auth, marks.priv),
      ip_overrides: [{ ip: '198.18.10.50', credential: { version: 'V2c', community: marks.community } }, { ip: '198.18.10.51', credential: v3(marks.oAuth, marks.oPriv) }],
    } });
    for (const sent of [redactDiscoveryType(dt), metadataEntry(dt, randomUUID(), '2026-11-22T10:00:00Z')]) {
      const text = JSON.stringify(sent);
      for (const m of Object.values(marks)) expect(text, m).to.not.include(m);
      expect((sent as any).snmp_credentials.default_credential).to.deep.equal({ ...v3(SECRET_MASK, SECRET_MASK) });
    }
    expect(JSON.stringify(dt)).to.include(marks.auth); // the work itself untouched
    const merged = mergeCredentials(redactDiscoveryType(dt).snmp_credentials, [{ version: 'v2c', community: 'cli' }]);
    expect(credentialsFor(merged, '198.18.10.51')).to.deep.equal([{ version: 'v2c', community: 'cli' }]);
  });
});
