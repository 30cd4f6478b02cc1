// What the scanner probes, checked with the TCP sweep replaced by a stub. The addresses are
// loopback all the same (a bug that bypassed the stub would still only reach 127.0.0.0/8), and the
// stub never reports an open port (an open port would be fingerprinted for real).
import { expect } from 'chai';
import { LIVENESS_PORTS, type PortSweep } from '../../agent/scan/liveness.js';
import { runScan } from '../../agent/scan/scan.js';
import type { Evidence, ScanOptions } from '../../agent/scan/types.js';

type Call = { ip: string; ports: readonly number[] };

function stubSweep(answers: Record<string, Evidence[]>) {
  const calls: Call[] = [];
  const sweep = async (ip: string, ports: readonly number[]): Promise<PortSweep> => {
    calls.push({ ip, ports });
    const evidence = (answers[ip] ?? []).filter((e) => 'port' in e && ports.includes(e.port));
    if (evidence.some((e) => e.kind === 'tcp_open')) throw new Error('the stub reports no open port');
    return { evidence, open: [] };
  };
  return { calls, sweep };
}

const budget = { probesPerSecond: 200, maxOpenSockets: 64 };

describe('agent scan: what gets probed', () => {
  it('every address of the targets and nothing else; ports only on live addresses unless assumeUp; a host only with evidence', async () => {
    const { calls, sweep } = stubSweep({
      '127.30.0.1': [{ kind: 'tcp_refused', port: 22 }],
      '127.31.0.2': [{ kind: 'tcp_refused', port: 5432 }], // answers only on a port outside the liveness set
    });
    const options: ScanOptions = {
      budget,
      targets: [{ cidr: '127.30.0.0/29' }, { cidr: '127.31.0.0/30', assumeUp: true }],
      known: { '127.30.0.1': [12345, 9101] }, extraPorts: [40000],
    };
    const report = await runScan(options, { sweep, onLink: [] });

    const targets = ['127.30.0.1', '127.30.0.2', '127.30.0.3', '127.30.0.4', '127.30.0.5', '127.30.0.6', '127.31.0.1', '127.31.0.2'];
    expect([...new Set(calls.map((c) => c.ip))].sort()).to.deep.equal(targets);
    expect(report.addressesTried).to.equal(8);
    for (const ip of targets) expect(calls.filter((c) => c.ip === ip)[0].ports, ip).to.deep.equal(LIVENESS_PORTS);
    const deep = (ip: string) => calls.filter((c) => c.ip === ip).slice(1);
    // Not assume-up: only the address that answered gets its ports probed.
    expect(deep('127.30.0.1')).to.have.length(1);
    for (const ip of targets.slice(1, 6)) expect(deep(ip), ip).to.deep.equal([]);
    const ports = deep('127.30.0.1')[0].ports;
    expect(ports).to.include.members([12345, 40000, 5432, 6379, 2222]);
    expect(ports.filter((p) => p >= 9100 && p <= 9107)).to.deep.equal([]);
    expect(ports.filter((p) => LIVENESS_PORTS.includes(p))).to.deep.equal([]); // not twice
    // Assume-up: both addresses get their ports probed; only the one that answered is a host.
    expect(deep('127.31.0.1')).to.have.length(1);
    expect(deep('127.31.0.2')).to.have.length(1);
    expect(report.hosts.map((h) => [h.ip, h.evidence])).to.deep.equal([
      ['127.30.0.1', [{ kind: 'tcp_refused', port: 22 }]],
      ['127.31.0.2', [{ kind: 'tcp_refused', port: 5432 }]],
    ]);
    expect(report.hosts[1].target).to.deep.equal({ cidr: '127.31.0.0/30', assumeUp: true });
    expect(report.aliveByEvidence).to.deep.equal({ tcp_refused: 2 });
  });

  it('a bad target refuses the run before any probe', async () => {
    const { calls, sweep } = stubSweep({});
    const run = runScan({ budget, targets: [{ cidr: '127.30.0.0/30' }, { cidr: '127.16.0.0/12' }] }, { sweep, onLink: [] });
    await run.then(() => expect.fail('scanned'), (err) => expect(String(err)).to.match(/more than the 65536/));
    expect(calls).to.deep.equal([]);
  });

  it('progress rises from 0 to 100 by addresses done, chunk after chunk', async () => {
    const { sweep } = stubSweep({ '127.30.0.9': [{ kind: 'tcp_refused', port: 80 }] });
    const seen: number[] = [];
    const report = await runScan({ budget, targets: [{ cidr: '127.30.0.0/28' }], onProgress: (p) => void seen.push(p) }, { sweep, onLink: [], chunkSize: 3 });
    expect(report.addressesTried).to.equal(14);
    expect(seen[0]).to.equal(0);
    expect(seen.at(-1)).to.equal(100);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).to.be.above(seen[i - 1]);
    expect(seen.length).to.be.within(10, 15); // one call per address done that raises it
  });

  it('a name only from the resolver the caller gives (none by default)', async () => {
    const { sweep } = stubSweep({ '127.30.0.1': [{ kind: 'tcp_refused', port: 22 }] });
    const plain = await runScan({ budget, targets: [{ cidr: '127.30.0.1/32' }] }, { sweep, onLink: [] });
    expect(plain.hosts[0].hostname).to.equal(null);
    const named = await runScan({ budget, targets: [{ cidr: '127.30.0.1/32' }] }, { sweep, onLink: [], reverseDns: async (ip) => `host-${ip}.lab` });
    expect(named.hosts[0]).to.deep.include({ hostname: 'host-127.30.0.1.lab', hostnameSource: 'ptr' });
  });

  it('the full range’s slice only for hosts that are real: never for a range judged a middlebox’s echo', async () => {
    const answers: Record<string, Evidence[]> = { '127.31.0.1': [{ kind: 'tcp_refused', port: 22 }] };
    for (let n = 1; n <= 14; n++) answers[`127.30.0.${n}`] = [{ kind: 'tcp_refused', port: 22 }]; // a reset for every address
    const { calls, sweep } = stubSweep(answers);
    const report = await runScan(
      { budget, targets: [{ cidr: '127.30.0.0/28' }, { cidr: '127.31.0.1/32' }], fullRangeSlice: { index: 0, of: 64 } },
      { sweep, onLink: [{ network: 0x7f1f0000, prefix: 16 }], readNeighbours: async () => new Map([['127.31.0.1', '00:1B:21:00:00:01']]) },
    );
    expect(report.hosts.map((h) => h.ip)).to.deep.equal(['127.31.0.1']);
    expect(report.warnings).to.have.length(1);
    const sliced = (ip: string) => calls.filter((c) => c.ip === ip && c.ports.includes(1));
    for (let n = 1; n <= 14; n++) expect(sliced(`127.30.0.${n}`), `127.30.0.${n}`).to.deep.equal([]);
    expect(sliced('127.31.0.1')).to.have.length(1);
    expect(sliced('127.31.0.1')[0].ports).to.include.members([1, 2, 1000]);
  });
});
