// The pure planning of a discovery merge (src/modules/discovery/plan.ts), without a database.
import { expect } from 'chai';
import {
  acceptBindings, canonical, claimStoredHosts, loneReports, matchChildren, mergeMetadata, mergeSource, nextRound, type BindingFact,
} from '../../src/modules/discovery/plan.js';

describe('discovery/plan', () => {
  it('canonical JSON ignores key order (as jsonb does)', () => {
    expect(canonical({ b: 1, a: [{ y: 2, x: null }] })).to.equal(canonical({ a: [{ x: null, y: 2 }], b: 1 }));
    expect(canonical({ a: 1 })).to.not.equal(canonical({ a: '1' }));
  });

  it('metadata: new entries first, an entry already stored (any key order) is not added again, at most 10', () => {
    const e = (n: number) => ({ type: 'Network', date: `d${n}` });
    expect(mergeMetadata([e(2)], [e(1)])).to.deep.equal([e(2), e(1)]);
    expect(mergeMetadata([{ date: 'd1', type: 'Network' }], [e(1)])).to.deep.equal([e(1)]);
    expect(mergeMetadata([e(3), e(3)], [])).to.deep.equal([e(3)]);
    const many = Array.from({ length: 10 }, (_, i) => e(i));
    expect(mergeMetadata([e(99)], many)).to.deep.equal([e(99), ...many.slice(0, 9)]);
  });

  it('sources: Manual is kept, same types merge (more confident details win), another type is replaced', () => {
    const manual = { type: 'Manual' };
    const found = { type: 'Discovery', metadata: [{ date: 'd2' }] };
    expect(mergeSource(manual, found)).to.equal(manual);
    expect(mergeSource({ type: 'System' }, found)).to.deep.equal(found);
    expect(mergeSource({ type: 'Discovery', metadata: [{ date: 'd1' }] }, found)).to.deep.equal({ type: 'Discovery', metadata: [{ date: 'd2' }, { date: 'd1' }] });
    const low = { type: 'DiscoveryWithMatch', metadata: [], details: { confidence: 'Low' } };
    const high = { type: 'DiscoveryWithMatch', metadata: [], details: { confidence: 'High' } };
    expect(mergeSource(low, high).details).to.deep.equal(high.details);
    expect(mergeSource(high, low).details).to.deep.equal(high.details);
  });

  it('children match by the keys in order, each stored child claimed once', () => {
    const stored = [{ id: 's1', k: 'a' }, { id: 's2', k: 'b' }];
    const reported = [{ id: 'r1', k: 'b' }, { id: 's1', k: 'z' }, { id: 'r3', k: 'b' }, { id: 'r4', k: 'c' }];
    const byKey = (x: { k: string }) => x.k;
    const byId = (x: { id: string }) => x.id;
    expect(matchChildren(reported, stored, [[byKey, byKey], [byId, byId]]).map((s) => s?.id)).to.deep.equal(['s2', 's1', undefined, undefined]);
  });

  it('bindings: a port stays with the service that has it; IP and port bindings of one service exclude each other on one address', () => {
    const b = (id: string, service: string, type: 'Port' | 'IPAddress', port: string | null, ip: string | null): BindingFact => ({ id, service_id: service, type, port_id: port, ip_address_id: ip });
    const stored = [b('s1', 'nginx', 'Port', 'p80', null)];
    const reported = [
      b('r1', 'nginx', 'Port', 'p80', null), // the stored one
      b('r2', 'apache', 'Port', 'p80', null), // port taken by nginx
      b('r3', 'apache', 'Port', 'p81', 'ip1'),
      b('r4', 'apache', 'IPAddress', null, 'ip1'), // conflicts with r3
      b('r5', 'snmpd', 'IPAddress', null, 'ip1'),
      b('r6', 'snmpd', 'IPAddress', null, 'ip1'), // identical to r5
    ];
    expect(acceptBindings(stored, reported).map((x) => x?.id ?? null)).to.deep.equal(['s1', null, 'r3', null, 'r5', 'r5']);
  });

  describe('batches', () => {
    // Reports as their identity keys (host id, ip:…, mac:…).
    const a = ['host:a', 'ip:1', 'mac:m1'];
    const b = ['host:b', 'ip:2'];
    const c = ['host:c', 'ip:3', 'mac:m1']; // the machine of a, seen again (same MAC)
    const d = ['host:d', 'ip:4'];
    const e = ['host:e', 'ip:3']; // the machine of c (same IP)
    const keys = (r: string[]) => r;

    it('lone reports share no key with any other report of the batch', () => {
      expect(loneReports([a, b, c, d], keys)).to.deep.equal([b, d]);
      expect(loneReports([a, a], keys)).to.deep.equal([]);
      expect(loneReports([], keys)).to.deep.equal([]);
    });

    it('a round holds the reports that share no key with an earlier pending one; the rest keep their order', () => {
      expect(nextRound([a, b, c, d, e], keys)).to.deep.equal({ round: [a, b, d], later: [c, e] });
      // e shares nothing with a, but waits behind c, the report of its machine it follows.
      expect(nextRound([c, e], keys)).to.deep.equal({ round: [c], later: [e] });
      expect(nextRound([e], keys)).to.deep.equal({ round: [e], later: [] });
    });

    it('a stored host matched by two reports of a round stays with the first; the others wait', () => {
      const { claimed, deferred } = claimStoredHosts([[4, 'H'], [1, 'G'], [2, 'H'], [7, 'H']]);
      expect([...claimed]).to.deep.equal([[1, 'G'], [2, 'H']]);
      expect([...deferred].sort()).to.deep.equal([4, 7]);
    });
  });
});

