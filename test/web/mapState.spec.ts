// The web map's pure state functions (web/src/mapState.ts): no DOM, no browser.
import { expect } from 'chai';
import { blockCardLines, blocksOf, changeLines, curveOf, dependencyNamesAt, diffMarks, hostsOnMap, matchHosts, presentAt, type GraphEdge, type GraphNode, type TopologyDiff } from '../../web/src/mapState.js';

const node = (x: Partial<GraphNode> & { id: string }): GraphNode => ({ kind: 'ip_address', entity_id: x.id.split(':')[1] ?? null, parent_id: null, label: x.id, ...x });

describe('web map state (pure)', () => {
  it('names each dependency of a selected host once, on an edge ending at the host, at that end', () => {
    const edge = (id: string, source: string, target: string, dependency_id?: string) => ({ id, source, target, kind: dependency_id ? 'request_path' : 'same_host', dependency_id }) as GraphEdge;
    const host = ['ip_address:w1', 'ip_address:w2'];
    expect(dependencyNamesAt([
      edge('sessions:far', 'ip_address:x', 'ip_address:y', 'sessions'), // not at the host: never named
      edge('sessions:1', 'ip_address:c', 'ip_address:w1', 'sessions'),
      edge('sessions:2', 'ip_address:c', 'ip_address:w2', 'sessions'), // the same dependency again: named once
      edge('shop:1', 'ip_address:w2', 'ip_address:a', 'shop'),
      edge('plain', 'ip_address:w1', 'ip_address:w2'),
    ], host)).to.deep.equal([{ edgeId: 'sessions:1', end: 'target' }, { edgeId: 'shop:1', end: 'source' }]);
  });

  it('lists each host once, by name, with every node that stands for it, in every view', () => {
    const hosts = hostsOnMap([
      node({ id: 'subnet:s', kind: 'subnet' }),
      node({ id: 'ip_address:a1', parent_id: 'subnet:s', host_id: 'h1', host_name: 'web', ip_address: '10.0.0.1' }),
      node({ id: 'ip_address:a2', parent_id: 'subnet:s', host_id: 'h1', host_name: 'web', ip_address: '10.0.0.2' }),
      node({ id: 'host:h2', kind: 'host', entity_id: 'h2', label: 'bare', hostname: 'bare.lan' }),
      node({ id: 'service:s1', kind: 'service', parent_id: 'host:h2', label: 'cron' }), // workloads: a service in its host
      node({ id: 'service:s2', kind: 'service', parent_id: 'tag:t', host_id: 'h1', host_name: 'web', label: 'nginx' }), // application
    ]);
    expect(hosts).to.deep.equal([
      { hostId: 'h2', name: 'bare', hostname: 'bare.lan', ips: [], nodeIds: ['host:h2', 'service:s1'] },
      { hostId: 'h1', name: 'web', ips: ['10.0.0.1', '10.0.0.2'], nodeIds: ['ip_address:a1', 'ip_address:a2', 'service:s2'] },
    ]);
  });

  it('search matches name, hostname or address, ignoring case', () => {
    const hosts = [
      { hostId: '1', name: 'Web-1', hostname: 'www.lan', ips: ['10.0.0.1'], nodeIds: [] },
      { hostId: '2', name: 'db', ips: ['10.0.0.20'], nodeIds: [] },
    ];
    expect(matchHosts(hosts, 'web').map((h) => h.hostId)).to.deep.equal(['1']);
    expect(matchHosts(hosts, 'WWW').map((h) => h.hostId)).to.deep.equal(['1']);
    expect(matchHosts(hosts, '10.0.0.2').map((h) => h.hostId)).to.deep.equal(['2']);
    expect(matchHosts(hosts, '  ')).to.have.length(2);
  });

  it('an item exists at an instant inside one of its intervals (from included, to excluded)', () => {
    const items = [
      { id: 'a', intervals: [{ from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, { from: '2026-01-03T00:00:00Z', to: null }] },
      { id: 'b' }, // no intervals: always there
    ];
    expect([...presentAt(items, '2026-01-01T00:00:00Z')]).to.deep.equal(['a', 'b']);
    expect([...presentAt(items, '2026-01-02T00:00:00Z')]).to.deep.equal(['b']);
    expect([...presentAt(items, '2027-01-01T00:00:00Z')]).to.deep.equal(['a', 'b']);
  });

  it('a diff marks nodes and edges, and reads as lines with before and after', () => {
    const diff: TopologyDiff = {
      from: 'f', to: 't',
      nodes: { added: [node({ id: 'host:n', label: 'new' })], removed: [node({ id: 'host:o', label: 'old' })], changed: [{ id: 'ip_address:a', kind: 'ip_address', changes: { host_name: ['web', 'web-1'], label: ['x', 'y'] } }] },
      edges: { added: [], removed: [{ id: 'same_host:1:2', kind: 'same_host', source: 'a', target: 'b' }], changed: [{ id: 'dependency:d', kind: 'request_path', changes: { color: ['Blue', 'Green'] } }] },
    };
    expect([...diffMarks(diff)]).to.deep.equal([['host:n', 'added'], ['host:o', 'removed'], ['ip_address:a', 'changed'], ['same_host:1:2', 'removed'], ['dependency:d', 'changed']]);
    expect(changeLines(diff, (id) => (id === 'ip_address:a' ? 'web 10.0.0.1' : undefined)).map((l) => l.text)).to.deep.equal([
      'new added', 'old removed', 'web 10.0.0.1 changed (host_name: web → web-1)', 'link request_path changed (color: Blue → Green)',
    ]);
  });

  it('blocks of small boxes: neighbours in a row and the rows under them join, never over a box that stays drawn or another block', () => {
    const box = (x: number, y: number, width = 10, height = 10) => ({ x, y, width, height });
    // Two rows of three; a box that stays drawn (titled) under the first of the second row's right.
    const positions = { a: box(0, 0), b: box(20, 0), c: box(40, 0), d: box(0, 20), e: box(20, 20), f: box(40, 40) };
    expect(blocksOf(['a', 'b', 'c', 'd', 'e'], positions, [])).to.deep.equal([{ ids: ['a', 'b', 'c', 'd', 'e'], bounds: box(0, 0, 50, 30) }]);
    // `f` stays drawn at (40, 40): the first row and the second still join (their bounds end at 30).
    expect(blocksOf(['a', 'b', 'c', 'd', 'e'], positions, [positions.f])).to.have.length(1);
    // A drawn box between the rows (x 30..40, y 12..18): the rows cannot join; the second starts its own block.
    expect(blocksOf(['a', 'b', 'c', 'd', 'e'], positions, [box(30, 12, 10, 6)])).to.deep.equal([
      { ids: ['a', 'b', 'c'], bounds: box(0, 0, 50, 10) },
      { ids: ['d', 'e'], bounds: box(0, 20, 30, 10) },
    ]);
    // A lone box is no block; the order given does not matter (reading order is used).
    expect(blocksOf(['e', 'a'], { a: box(0, 0), e: box(20, 20) }, [box(0, 20)])).to.deep.equal([]);
    expect(blocksOf(['b', 'a'], positions, [])).to.deep.equal([{ ids: ['a', 'b'], bounds: box(0, 0, 30, 10) }]);
  });

  it('a block of hosts counts them by kind, offline and new (as a subnet card); other containers by kind', () => {
    const host = (id: string, host_kind: string, more: Partial<GraphNode> = {}) => node({ id: `host:${id}`, kind: 'host', host_kind, ...more });
    expect(blockCardLines([host('a', 'camera'), host('b', 'camera'), host('c', 'printer', { offline: true })])).to.deep.equal(['3 hosts', '2 cameras', '1 printer', '1 offline']);
    expect(blockCardLines([node({ id: 'subnet:a', kind: 'subnet' }), node({ id: 'subnet:b', kind: 'subnet' }), node({ id: 'tag:c', kind: 'tag' })])).to.deep.equal(['2 subnets', '1 tag']);
  });

  it('edge styles map to curves, Scanopy’s aliases included', () => {
    expect(['Straight', 'Bezier', 'SimpleBezier', 'SmoothStep', 'Step', undefined].map(curveOf)).to.deep.equal(['straight', 'bezier', 'bezier', 'taxi', 'taxi', 'taxi']);
  });
});
