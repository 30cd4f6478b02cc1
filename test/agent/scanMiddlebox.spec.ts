// The middlebox rule and the neighbour-table parsers: pure functions on recorded data.
import { expect } from 'chai';
import { findMiddleboxes, MIDDLEBOX_MIN_ADDRESSES } from '../../agent/scan/middlebox.js';
import { statusHasNetRaw } from '../../agent/scan/liveness.js';
import { isRandomMac, parseIpNeighJson, parseProcNetArp } from '../../agent/scan/neighbours.js';
import type { FoundHost, FoundService } from '../../agent/scan/types.js';

const target = { cidr: '198.18.20.0/24' };
function host(last: number, ports: number[], extra: Partial<FoundHost> = {}): FoundHost {
  return {
    ip: `198.18.20.${last}`, mac: null, hostname: null,
    evidence: ports.length ? [{ kind: 'tcp_open', port: ports[0] }] : [{ kind: 'tcp_refused', port: 22 }],
    openPorts: ports.map((port) => ({ port, protocol: 'Tcp' })), services: [], target, ...extra,
  };
}
const sip = (n: number) => Array.from({ length: n }, (_, i) => host(128 + i, [5060]));
const ssh: FoundService = { rule: 'ssh-greeting', name: 'SSH', definition: 'SSH', port: 22, protocol: 'Tcp', confidence: 'High', reason: 'x' };

describe('agent scan: middlebox rule', () => {
  it('many addresses answering the same ports with nothing validated: one warning, none recorded', () => {
    const real = [host(14, [22], { services: [ssh] }), host(16, [])];
    const { phantoms, warnings } = findMiddleboxes(target.cidr, [...sip(126), ...real], 254);
    expect(phantoms.size).to.equal(126);
    expect(phantoms.has('198.18.20.14')).to.equal(false);
    expect(phantoms.has('198.18.20.16')).to.equal(false);
    expect(warnings).to.deep.equal(['198.18.20.0/24: 126 addresses answered 5060/tcp alike and nothing validated: a middlebox? none recorded']);
  });

  it('fewer than the minimum, or under half of the answering addresses: ordinary hosts', () => {
    expect(findMiddleboxes(target.cidr, sip(MIDDLEBOX_MIN_ADDRESSES - 1), 254).phantoms.size).to.equal(0);
    expect(findMiddleboxes(target.cidr, sip(MIDDLEBOX_MIN_ADDRESSES), 254).phantoms.size).to.equal(MIDDLEBOX_MIN_ADDRESSES);
    const others = Array.from({ length: 12 }, (_, i) => host(10 + i, [22, 80 + i]));
    expect(findMiddleboxes(target.cidr, [...sip(10), ...others], 254).warnings).to.deep.equal([]);
  });

  it('a validated answer (a recognised service, or a MAC) keeps an address out of the group', () => {
    const validated = sip(10).map((h) => ({ ...h, services: [{ ...ssh, port: 5060 }] }));
    expect(findMiddleboxes(target.cidr, validated, 254).phantoms.size).to.equal(0);
    const withMac = sip(10).map((h) => ({ ...h, evidence: [...h.evidence, { kind: 'neighbour' as const, mac: '00:1B:21:00:00:11' }] }));
    expect(findMiddleboxes(target.cidr, withMac, 254).phantoms.size).to.equal(0);
    const lowOnly = sip(10).map((h) => ({ ...h, services: [{ ...ssh, port: 5060, confidence: 'Low' as const }] }));
    expect(findMiddleboxes(target.cidr, lowOnly, 254).phantoms.size).to.equal(10); // a port-number guess validates nothing
  });

  it('a range where nearly every address refuses every port (a firewall resetting for absent hosts): one warning, none recorded', () => {
    const refusing = (n: number) => Array.from({ length: n }, (_, i) => host(1 + i, []));
    const all = findMiddleboxes(target.cidr, refusing(240), 254);
    expect(all.phantoms.size).to.equal(240);
    expect(all.warnings).to.deep.equal(['198.18.20.0/24: 240 of 254 addresses refused every port (a reset) and nothing else: a firewall answering for the range? none recorded']);
    expect(findMiddleboxes(target.cidr, refusing(200), 254).phantoms.size).to.equal(0); // under 90 % of the range: real hosts
    expect(findMiddleboxes('198.18.20.0/29', refusing(6), 6).phantoms.size).to.equal(0); // fewer than 8
    const withMac = refusing(240).map((h) => ({ ...h, evidence: [...h.evidence, { kind: 'neighbour' as const, mac: '00:1B:21:00:00:11' }] }));
    expect(findMiddleboxes(target.cidr, withMac, 254).phantoms.size).to.equal(0);
  });
});

describe('agent scan: neighbour table', () => {
  it('ip -j neigh: REACHABLE, STALE and DELAY entries with a lladdr; FAILED, INCOMPLETE and PERMANENT ignored', () => {
    const text = JSON.stringify([
      { dst: '198.18.10.11', dev: 'ag0', lladdr: '00:1b:21:00:00:11', state: ['REACHABLE'] },
      { dst: '198.18.10.12', dev: 'ag0', lladdr: 'aa:bb:cc:00:00:12', state: ['STALE'] },
      { dst: '198.18.10.13', dev: 'ag0', lladdr: 'aa:bb:cc:00:00:13', state: ['DELAY'] },
      { dst: '198.18.10.14', dev: 'ag0', state: ['FAILED'] },
      { dst: '198.18.10.15', dev: 'ag0', state: ['INCOMPLETE'] },
      { dst: '198.18.10.16', dev: 'ag0', lladdr: 'aa:bb:cc:00:00:16', state: ['PERMANENT'] },
      { dst: 'fe80::1', dev: 'ag0', lladdr: 'aa:bb:cc:00:00:17', state: ['REACHABLE'] },
    ]);
    expect([...parseIpNeighJson(text)]).to.deep.equal([
      ['198.18.10.11', '00:1B:21:00:00:11'], ['198.18.10.12', 'AA:BB:CC:00:00:12'], ['198.18.10.13', 'AA:BB:CC:00:00:13'],
    ]);
  });

  it('/proc/net/arp: complete entries only', () => {
    const text = [
      'IP address       HW type     Flags       HW address            Mask     Device',
      '198.18.10.11     0x1         0x2         00:1b:21:00:00:11     *        ag0',
      '198.18.10.14     0x1         0x0         00:00:00:00:00:00     *        ag0',
      '198.18.10.16     0x1         0x6         aa:bb:cc:00:00:16     *        ag0',
    ].join('\n');
    expect([...parseProcNetArp(text)]).to.deep.equal([['198.18.10.11', '00:1B:21:00:00:11']]);
  });

  it('flags locally administered (random) MACs', () => {
    expect(isRandomMac('02:FC:00:00:00:05')).to.equal(true);
    expect(isRandomMac('DA:A1:19:00:00:01')).to.equal(true);
    expect(isRandomMac('00:1B:21:00:00:11')).to.equal(false);
  });
});

describe('agent scan: capabilities', () => {
  it('reads CAP_NET_RAW (bit 13) from the effective set', () => {
    expect(statusHasNetRaw('Name:\tnode\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n')).to.equal(true); // root
    expect(statusHasNetRaw('CapEff:\t0000000000002000\n')).to.equal(true); // setcap cap_net_raw
    expect(statusHasNetRaw('CapPrm:\t0000000000002000\nCapEff:\t0000000000000000\n')).to.equal(false);
    expect(statusHasNetRaw('CapEff:\t0000000000001000\n')).to.equal(false);
    expect(statusHasNetRaw('Name:\tnode\n')).to.equal(false);
  });
});
