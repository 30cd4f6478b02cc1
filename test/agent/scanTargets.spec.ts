// Targets and port choice: pure functions, no probe.
import { expect } from 'chai';
import { fullRangeSlice, LIGHT_PORTS, portsToProbe } from '../../agent/scan/ports.js';
import { expandCidr, expandTargets, MAX_TARGET_ADDRESSES } from '../../agent/scan/targets.js';

describe('agent scan: targets', () => {
  it('skips the network and broadcast addresses of a /24', () => {
    const a = expandCidr('198.18.10.0/24');
    expect(a).to.have.length(254);
    expect(a[0]).to.equal('198.18.10.1');
    expect(a.at(-1)).to.equal('198.18.10.254');
    expect(a).to.not.include('198.18.10.0').and.not.include('198.18.10.255');
  });

  it('keeps both addresses of a /31 and the one of a /32 (or a bare address)', () => {
    expect(expandCidr('198.18.10.4/31')).to.deep.equal(['198.18.10.4', '198.18.10.5']);
    expect(expandCidr('198.18.10.7/32')).to.deep.equal(['198.18.10.7']);
    expect(expandCidr('198.18.10.7')).to.deep.equal(['198.18.10.7']);
    expect(expandCidr('198.18.10.8/30')).to.deep.equal(['198.18.10.9', '198.18.10.10']);
  });

  it('refuses a range bigger than a /16 with a clear error, and accepts a /16', () => {
    expect(() => expandCidr('198.18.0.0/15')).to.throw(/131072 addresses: more than the 65536 \(\/16\)/);
    expect(expandCidr('198.18.0.0/16')).to.have.length(MAX_TARGET_ADDRESSES - 2);
  });

  it('refuses malformed targets and host bits set', () => {
    for (const bad of ['198.18.10.0/33', '198.18.10/24', '198.18.10.256/32', 'fe80::/64', '198.18.10.0/24/1', '198.18.10.0/x']) {
      expect(() => expandCidr(bad), bad).to.throw();
    }
    expect(() => expandCidr('198.18.10.7/24')).to.throw(/host bits set .*198\.18\.10\.0\/24/);
  });

  it('lists an address once when targets overlap, and refuses the whole run for one bad target', () => {
    const out = expandTargets([{ cidr: '198.18.10.0/30' }, { cidr: '198.18.10.2/32' }, { cidr: '198.18.10.8/31' }]);
    expect(out.map((t) => t.addresses)).to.deep.equal([['198.18.10.1', '198.18.10.2'], [], ['198.18.10.8', '198.18.10.9']]);
    expect(() => expandTargets([{ cidr: '198.18.10.0/30' }, { cidr: '10.0.0.0/8' }])).to.throw(/more than/);
  });

  it('a run of exactly 262,144 addresses (four /16s and 8 more) is accepted; one address more refuses the whole run', () => {
    // Only expanded here, nothing probed. A /16 gives 65,534 addresses (network and broadcast skipped).
    const atCap = ['198.18.0.0/16', '198.19.0.0/16', '198.20.0.0/16', '198.21.0.0/16', '198.22.0.0/29', '198.22.0.8/31'].map((cidr) => ({ cidr }));
    const accepted = expandTargets(atCap);
    expect(accepted.reduce((n, t) => n + t.addresses.length, 0)).to.equal(262_144);
    expect(() => expandTargets([...atCap, { cidr: '198.22.0.10/32' }])).to.throw(/262145 addresses in all targets: more than 262144 per run/);
    // The per-target cap at its edge too: a /16 whole, a /15 refused even alone in a small run.
    expect(expandTargets([{ cidr: '198.18.0.0/16' }])[0]!.addresses).to.have.length(65_534);
    expect(() => expandTargets([{ cidr: '198.18.0.0/15' }])).to.throw(/more than the 65536 \(\/16\)/);
  });
});

describe('agent scan: ports', () => {
  it('has a light set of about 100 ports with the common services, and no raw printing port', () => {
    expect(LIGHT_PORTS.length).to.be.within(90, 120);
    expect(new Set(LIGHT_PORTS).size).to.equal(LIGHT_PORTS.length);
    for (const p of [21, 22, 23, 25, 53, 80, 443, 2222, 3306, 5432, 6379, 8080, 8443]) expect(LIGHT_PORTS).to.include(p);
    expect(LIGHT_PORTS.filter((p) => p >= 9100 && p <= 9107)).to.deep.equal([]);
    expect(LIGHT_PORTS).to.not.include(161); // SNMP is UDP
  });

  it('never gives 9100-9107, from any source, unless probeRawSocketPorts', () => {
    const choice = { extraPorts: [9100, 9104, 9107, 9108], known: [9101, 22], fullRangeSlice: { index: 0, of: 1 } };
    const ports = portsToProbe(choice);
    expect(ports.filter((p) => p >= 9100 && p <= 9107)).to.deep.equal([]);
    expect(ports).to.include(9108).and.include(9099);
    expect(portsToProbe({ ...choice, probeRawSocketPorts: true }).filter((p) => p >= 9100 && p <= 9107)).to.have.length(8);
  });

  it('adds known and extra ports, each once, ascending, within 1-65535', () => {
    const ports = portsToProbe({ extraPorts: [60000, 22, 0, 70000], known: [12345] }, [80, 22]);
    expect(ports).to.deep.equal([22, 80, 12345, 60000]);
  });

  it('spreads the full range over runs: the slices of a cycle cover 1-65535 exactly once', () => {
    const seen = new Uint8Array(65536);
    for (let i = 0; i < 7; i++) for (const p of fullRangeSlice(i, 7)) seen[p]++;
    expect(seen[0]).to.equal(0);
    expect(seen.subarray(1).every((n) => n === 1)).to.equal(true);
    expect(fullRangeSlice(9, 7)).to.deep.equal(fullRangeSlice(2, 7)); // the run counter wraps
    expect(fullRangeSlice(0, 7).length).to.be.within(9362, 9363);
    expect(() => fullRangeSlice(0, 0)).to.throw();
  });
});
