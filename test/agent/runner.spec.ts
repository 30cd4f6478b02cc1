// The agent's session runner and self-report without a server: a recording transport and a fake
// scanner (no probe). Progress pacing is set through the runner's intervals, never measured.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { WorkPayload } from '../../agent/protocol/client.js';
import { hostRequest, networkDiscoveryType, redactDiscoveryType } from '../../agent/protocol/entities.js';
import { runSession, type RunnerDeps, type Transport } from '../../agent/runner.js';
import type { FoundHost, ScanNetwork, ScanOptions, ScanReport } from '../../agent/scan/types.js';
import { describeInterface, selfHostId, type LocalHost } from '../../agent/selfReport.js';
import { emptyState } from '../../agent/state.js';

const NETWORK = '6a1e3c2b-1d4f-4a5b-8c7d-9e0f1a2b3c4d';
const DAEMON = '0b9a8c7d-6e5f-4a3b-9c1d-2e3f4a5b6c7d';
const silent = { info() {}, warn() {}, error() {} };
const report = (hosts: FoundHost[] = [], cancelled = false): ScanReport => ({ addressesTried: 1, aliveByEvidence: {}, hosts, warnings: [], probesSent: 0, cancelled });

function recordingTransport() {
  const updates: WorkPayload[] = [];
  const transport: Transport = {
    postSubnet: async (body) => ({ id: body.id, cidr: body.cidr }),
    listSubnets: async () => [],
    postHost: async () => {},
    update: async (p) => { updates.push(structuredClone(p)); },
    updateCapabilities: async () => {},
  };
  return { transport, updates };
}

function deps(transport: Transport, scanNetwork: ScanNetwork, extra: Partial<RunnerDeps> = {}): RunnerDeps {
  return {
    transport, scanNetwork, state: emptyState(), saveState() {}, config: { targets: ['198.18.10.0/24'], pps: 10, sockets: 2, probeRawSocketPorts: false, fullRangeRuns: 64 },
    networkId: NETWORK, daemonId: DAEMON, log: silent, listenPort: null, ...extra,
  };
}

const work = (type: Record<string, unknown>) => ({ session_id: '11111111-2222-4333-8444-555555555555', discovery_type: type as any });
const phases = (updates: WorkPayload[]) => updates.map((u) => (u.phase === 'Scanning' ? `Scanning ${u.progress}` : u.phase));

describe('agent: the session runner', () => {
  it('a rise in progress is reported at most once per progressMinMs (upstream 10 s)', async () => {
    const scan: ScanNetwork = async (o) => {
      for (const p of [10, 20, 30]) o.onProgress?.(p);
      return report();
    };
    const paced = recordingTransport();
    await runSession(work(networkDiscoveryType(null)), new AbortController().signal, deps(paced.transport, scan, { progressMinMs: 3_600_000, keepAliveMs: 3_600_000 }));
    expect(phases(paced.updates)).to.deep.equal(['Started', 'Complete']);
    const every = recordingTransport();
    await runSession(work(networkDiscoveryType(null)), new AbortController().signal, deps(every.transport, scan, { progressMinMs: 0, keepAliveMs: 3_600_000 }));
    expect(phases(every.updates)).to.deep.equal(['Started', 'Scanning 10', 'Scanning 20', 'Scanning 30', 'Complete']);
    expect(every.updates.at(-1)).to.include({ progress: 100 });
    expect(every.updates.at(-1)!.finished_at).to.be.a('string');
  });

  it('without progress, a keep-alive Scanning update every keepAliveMs (upstream 30 s), so the server never thinks it stalled', async () => {
    const { transport, updates } = recordingTransport();
    const scan: ScanNetwork = (o) => new Promise((resolve) => {
      o.onProgress?.(5);
      const check = setInterval(() => {
        if (updates.filter((u) => u.phase === 'Scanning').length >= 3) {
          clearInterval(check);
          resolve(report());
        }
      }, 5);
    });
    await runSession(work(networkDiscoveryType(null)), new AbortController().signal, deps(transport, scan, { progressMinMs: 3_600_000, keepAliveMs: 10 }));
    expect(phases(updates)).to.deep.equal(['Started', 'Scanning 5', 'Scanning 5', 'Scanning 5', 'Complete']);
  });

  it('exactly one terminal update: Cancelled when aborted, Failed with the error when the scan throws or the type is unknown', async () => {
    const controller = new AbortController();
    const cancelled = recordingTransport();
    let scanning!: () => void;
    const scanStarted = new Promise<void>((resolve) => { scanning = resolve; });
    const slow: ScanNetwork = (o) => new Promise((resolve) => {
      o.signal!.addEventListener('abort', () => resolve(report([], true)));
      scanning();
    });
    const running = runSession(work(networkDiscoveryType(null)), controller.signal, deps(cancelled.transport, slow));
    await scanStarted;
    controller.abort();
    expect((await running).terminal.phase).to.equal('Cancelled');
    expect(phases(cancelled.updates)).to.deep.equal(['Started', 'Cancelled']);

    const failed = recordingTransport();
    const broken: ScanNetwork = async () => { throw new Error('targets: /8 is more than the cap of /16'); };
    await runSession(work(networkDiscoveryType(null)), new AbortController().signal, deps(failed.transport, broken));
    expect(phases(failed.updates)).to.deep.equal(['Started', 'Failed']);
    expect(failed.updates[1]!.error).to.equal('targets: /8 is more than the cap of /16');

    const docker = recordingTransport();
    await runSession(work({ type: 'Docker', host_id: null }), new AbortController().signal, deps(docker.transport, broken));
    expect(phases(docker.updates)).to.deep.equal(['Started', 'Failed']);
    expect(docker.updates[1]!.error).to.match(/no Docker endpoint configured/); // Docker work with no --docker endpoint
  });

  it('a Network session’s end carries the run’s report, within the server’s bounds; a cancelled run says it is incomplete', async () => {
    const noisy: ScanNetwork = async () => ({ ...report(), addressesTried: 4094, aliveByEvidence: { tcp_open: 3 }, probesSent: 9000, warnings: Array.from({ length: 150 }, (_, i) => `${i} ${'x'.repeat(600)}`) });
    const { transport, updates } = recordingTransport();
    await runSession(work(networkDiscoveryType(null)), new AbortController().signal, deps(transport, noisy));
    const end = updates.at(-1)!;
    expect(updates.slice(0, -1).every((u) => !('report' in u))).to.equal(true);
    expect(end.report).to.include({ addresses_tried: 4094, probes_sent: 9000 });
    expect(end.report!.alive_by_evidence).to.deep.equal({ tcp_open: 3 });
    expect(end.report!.warnings).to.have.length(100);
    expect(Math.max(...end.report!.warnings.map((w) => w.length))).to.equal(500);

    const controller = new AbortController();
    const cancelled = recordingTransport();
    const stopped: ScanNetwork = async (o) => { controller.abort(); return { ...report([], true), addressesTried: 17, signal: o.signal } as ScanReport; };
    await runSession(work(networkDiscoveryType(null)), controller.signal, deps(cancelled.transport, stopped));
    expect(cancelled.updates.at(-1)).to.include({ phase: 'Cancelled' });
    expect(cancelled.updates.at(-1)!.report!.incomplete).to.deep.equal(['the run was cancelled after 17 addresses: hosts not yet probed are missing from it']);
  });

  it('the full range is spread over the runs (the run counter picks the slice); --full-range-runs 0 keeps to the light set', async () => {
    const asked: Array<ScanOptions['fullRangeSlice']> = [];
    const scan: ScanNetwork = async (o) => { asked.push(o.fullRangeSlice); return report(); };
    const state = emptyState();
    for (let i = 0; i < 3; i++) await runSession(work(networkDiscoveryType(null)), new AbortController().signal, deps(recordingTransport().transport, scan, { state }));
    await runSession(work(networkDiscoveryType(null)), new AbortController().signal, deps(recordingTransport().transport, scan, { state, config: { targets: ['198.18.10.0/24'], pps: 10, sockets: 2, probeRawSocketPorts: false, fullRangeRuns: 0 } }));
    expect(asked).to.deep.equal([{ index: 0, of: 64 }, { index: 1, of: 64 }, { index: 2, of: 64 }, undefined]);
  });

  it('each approved subnet carries its options to the scanner (SNMP public on unless the approval or --no-snmp-public says not; 9100–9107 only where opted in)', async () => {
    const subnets = [{ id: 'aaaaaaaa-0000-4000-8000-000000000001', cidr: '198.18.40.0/24' }, { id: 'aaaaaaaa-0000-4000-8000-000000000002', cidr: '198.18.41.0/24' }];
    const transport = { ...recordingTransport().transport, listSubnets: async () => subnets };
    const asked: ScanOptions['targets'][] = [];
    const scan: ScanNetwork = async (o) => { asked.push(o.targets); return report(); };
    const type = {
      ...networkDiscoveryType(subnets.map((s) => s.id)),
      target_options: [{ subnet_id: subnets[0]!.id, snmp_public: true, probe_raw_socket_ports: true }, { subnet_id: subnets[1]!.id, snmp_public: false, probe_raw_socket_ports: false }],
    };
    const config = { targets: ['198.18.42.0/24'], pps: 10, sockets: 2, probeRawSocketPorts: false, fullRangeRuns: 0 };
    await runSession(work(type), new AbortController().signal, deps(transport, scan, { config }));
    expect(asked[0]!.map((t) => [t.cidr, t.snmpPublic, t.probeRawSocketPorts ?? false])).to.deep.equal([
      ['198.18.40.0/24', true, true], ['198.18.41.0/24', false, false], ['198.18.42.0/24', true, false]]);
    await runSession(work(type), new AbortController().signal, deps(transport, scan, { config: { ...config, snmpPublic: false } }));
    expect(asked[1]!.map((t) => t.snmpPublic)).to.deep.equal([false, false, false]);
  });

  it('SNMP communities never leave the agent in reports (metadata redacted)', () => {
    const dt = networkDiscoveryType(null, { snmp_credentials: { default_credential: { version: 'V2c', community: 's3cret' }, ip_overrides: [{ ip: '198.18.10.5', credential: { version: 'V2c', community: 'other' } }] } });
    const redacted = redactDiscoveryType(dt) as any;
    expect(redacted.snmp_credentials.default_credential.community).to.equal('********');
    expect(redacted.snmp_credentials.ip_overrides[0].credential.community).to.equal('********');
    const target = { cidr: '198.18.10.0/24', subnetId: '7b1e3c2b-1d4f-4a5b-8c7d-9e0f1a2b3c4d' };
    const body = hostRequest({ ip: '198.18.10.5', mac: null, hostname: null, evidence: [{ kind: 'icmp' }], openPorts: [], services: [], target }, {
      networkId: NETWORK, daemonId: DAEMON, subnetId: target.subnetId, discoveryType: dt, date: '2026-11-25T00:00:00.000Z', description: null,
    });
    expect(JSON.stringify(body)).to.not.match(/s3cret|other/);
  });

  it('the progress updates of a work with SNMP credentials carry them redacted', async () => {
    const dt = networkDiscoveryType(null, { snmp_credentials: { default_credential: { version: 'V2c', community: 's3cret' }, ip_overrides: [] } });
    const { transport, updates } = recordingTransport();
    await runSession(work(dt), new AbortController().signal, deps(transport, async () => report()));
    expect(phases(updates)).to.deep.equal(['Started', 'Complete']);
    expect(JSON.stringify(updates)).to.not.include('s3cret');
    expect((updates[0]!.discovery_type as any).snmp_credentials.default_credential).to.deep.equal({ version: 'V2c', community: '********' });
  });
});

describe('agent: self-report', () => {
  let sys: string;
  beforeEach(() => {
    // A /sys/class/net of a host with a bridge (br0 over eth0, veth1) and a bond (bond0 over eth1, eth2).
    sys = mkdtempSync(join(tmpdir(), 'agent-sys-'));
    for (const n of ['br0/brif/eth0', 'br0/brif/veth1', 'bond0/bonding', 'eth0', 'eth1', 'eth2', 'veth1', 'lo']) mkdirSync(join(sys, n), { recursive: true });
    writeFileSync(join(sys, 'bond0/bonding/slaves'), 'eth1 eth2\n');
    symlinkSync('../br0', join(sys, 'eth0/master'));
    symlinkSync('../bond0', join(sys, 'eth1/master'));
  });
  afterEach(() => rmSync(sys, { recursive: true, force: true }));

  it('names bridge and bond parents in the interface name', () => {
    expect(describeInterface('br0', sys)).to.equal('br0 (bridge of eth0, veth1)');
    expect(describeInterface('bond0', sys)).to.equal('bond0 (bond of eth1, eth2)');
    expect(describeInterface('eth0', sys)).to.equal('eth0 (port of br0)');
    expect(describeInterface('eth1', sys)).to.equal('eth1 (in bond bond0)');
    expect(describeInterface('lo', sys)).to.equal('lo');
  });

  it('the host id comes from the machine id and the network: a reinstalled agent (new daemon id) is the same host', () => {
    const local: LocalHost = { hostname: 'a', machineId: 'f00d', interfaces: [] };
    expect(selfHostId(local, NETWORK, DAEMON)).to.equal(selfHostId(local, NETWORK, '9c1d2e3f-0b9a-4c7d-8e5f-4a3b6c7d0b9a'));
    expect(selfHostId(local, NETWORK, DAEMON)).to.not.equal(selfHostId({ ...local, machineId: 'beef' }, NETWORK, DAEMON));
    expect(selfHostId(local, NETWORK, DAEMON)).to.not.equal(selfHostId(local, '7b1e3c2b-1d4f-4a5b-8c7d-9e0f1a2b3c4d', DAEMON));
  });
});
