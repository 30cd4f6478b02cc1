// The map screen's reducer (web/src/mapScreenState.ts): every transition the screen makes, pure (no
// DOM, no browser, no API): select a host, change the view, tag or hidden hosts, search, open and
// close containers, the graph loaded and refreshed live, the change stream, the history (opened,
// laid out, stepped, sought, closed), a comparison loaded, services read, pins, errors, More.
import { expect } from 'chai';
import {
  addressOf, fixedInstant, hostTag, initialMapState, isLive, listedHosts, marksOf, reduceMap, statusText, type MapAction, type MapState, type Timeline,
} from '../../web/src/mapScreenState.js';
import type { GraphNode, Topology, TopologyDiff } from '../../web/src/mapState.js';

const node = (x: Partial<GraphNode> & { id: string }): GraphNode => ({ kind: 'ip_address', entity_id: x.id.split(':')[1] ?? null, parent_id: null, label: x.id, ...x });
const box = { x: 0, y: 0, width: 10, height: 10 };
const graph = (o: { digest?: string; status?: 'ready' | 'pending' | 'failed'; nodes?: GraphNode[] } = {}): Topology => {
  const nodes = o.nodes ?? [
    node({ id: 'subnet:s', kind: 'subnet', label: '10.0.0.0/24' }),
    node({ id: 'ip_address:a', parent_id: 'subnet:s', host_id: 'h1', host_name: 'web', ip_address: '10.0.0.1' }),
    node({ id: 'ip_address:b', parent_id: 'subnet:s', host_id: 'h2', host_name: 'db', ip_address: '10.0.0.2', offline: true }),
    node({ id: 'collapsed:c', kind: 'collapsed', label: 'big', counts: { hosts: 40 } } as Partial<GraphNode> & { id: string }),
  ];
  return {
    nodes, edges: [{ id: 'e1', source: 'ip_address:a', target: 'ip_address:b', kind: 'same_subnet' } as Topology['edges'][number]],
    layout: { status: o.status ?? 'ready', positions: Object.fromEntries(nodes.map((n) => [n.id, box])), pinned: [] } as unknown as Topology['layout'],
    digest: o.digest ?? 'd1', available_views: ['l3', 'workloads'],
  } as Topology;
};
const T0 = '2026-12-01T10:00:00.000Z';
const T1 = '2026-12-01T11:00:00.000Z';
const T2 = '2026-12-01T12:00:00.000Z';
const timeline = (status: 'ready' | 'pending' = 'ready'): Timeline => {
  const g = graph({ status });
  // db exists only from T1 on.
  g.nodes = g.nodes.map((n) => (n.id === 'ip_address:b' ? { ...n, intervals: [{ from: T1, to: null }] } : n));
  return { ...g, ticks: [T0, T1, T2], tick_changes: [1, 3, 1] };
};
const start = (query = 'view=l3', mode: 'map' | 'diff' = 'map') => initialMapState('n1', new URLSearchParams(query), mode);
const run = (s: MapState, ...actions: MapAction[]) => actions.reduce(reduceMap, s);
/** The line under the title, instants as the API gives them. */
const line = (s: MapState) => statusText(s, (iso) => iso ?? '—');
const loaded = (query?: string) => run(start(query), { type: 'graphLoaded', graph: graph() });
const q = (p: Record<string, unknown>) => `?${Object.entries(p).filter(([, v]) => v !== undefined && v !== '' && !(Array.isArray(v) && !v.length)).map(([k, v]) => `${k}=${String(v)}`).join('&')}`;

describe('web map screen state (pure reducer)', () => {
  it('starts from the address: view, at, tag, hidden hosts, expanded containers', () => {
    const s = start('view=l2&at=2026-12-01T00:00:00Z&tag=t1&hidden=true&expand=a,b');
    expect([s.view, s.at, s.tagId, s.includeHidden, s.expand]).to.deep.equal(['l2', '2026-12-01T00:00:00Z', 't1', true, ['a', 'b']]);
    expect(start().view).to.equal('l3');
  });

  it('graphLoaded: the graph drawn, the views offered, the problem cleared, the status counted', () => {
    const s = run(start(), { type: 'failed', message: 'boom' }, { type: 'graphLoaded', graph: graph() });
    expect(s.graph?.digest).to.equal('d1');
    expect(s.views).to.deep.equal(['l3', 'workloads']);
    expect(s.problem).to.equal(undefined);
    expect(line(s)).to.equal('Live — 4 nodes — 1 host offline');
    expect(line(run(start(), { type: 'graphLoaded', graph: graph({ status: 'pending' }) }))).to.equal('Laying out the map…');
    expect(line(start()), 'nothing shown yet: the line stays').to.equal(undefined);
  });

  it('viewChosen: another view, nothing of the previous one kept (graph, history, expanded containers)', () => {
    const s = run(loaded('view=l3&expand=x'), { type: 'timelineLoaded', timeline: timeline(), from: T0 }, { type: 'viewChosen', view: 'workloads' });
    expect([s.view, s.graph, s.timeline, s.tick, s.expand]).to.deep.equal(['workloads', undefined, undefined, undefined, []]);
  });

  it('tagChosen and hiddenChosen: the filters, in the address; a tag of services is not the API\'s host filter', () => {
    let s = run(loaded(), { type: 'tagChosen', tagId: 't1' }, { type: 'hiddenChosen', includeHidden: true });
    expect(addressOf(s, '', q)).to.equal('/networks/n1/topology?view=l3&tag=t1&hidden=true');
    expect(hostTag(s)).to.deep.equal(['t1']);
    s = run(s, { type: 'servicesLoaded', tags: [{ id: 't1', name: 'prod' }], serviceTags: new Map([['t1', new Set(['svc1'])]]), serviceHosts: new Map([['svc1', 'h2']]), dependencies: new Map() });
    expect(hostTag(s)).to.equal(undefined);
    expect(listedHosts(s).map((x) => x.hostId)).to.deep.equal(['h2']);
    expect(marksOf(s).get('ip_address:a')).to.deep.equal(['filtered']);
    expect(run(s, { type: 'tagChosen', tagId: '' }).tagId).to.equal(undefined);
  });

  it('searched: the hosts listed and outlined', () => {
    const s = run(loaded(), { type: 'searched', search: 'DB' });
    expect(listedHosts(s).map((x) => x.name)).to.deep.equal(['db']);
    expect(marksOf(s).get('ip_address:b')).to.deep.equal(['match']);
  });

  it('hostSelected: the host selected, and none again; the same one leaves the state as it is', () => {
    const s = run(loaded(), { type: 'hostSelected', hostId: 'h1' });
    expect(s.selectedHost).to.equal('h1');
    expect(reduceMap(s, { type: 'hostSelected', hostId: 'h1' })).to.equal(s);
    expect(run(s, { type: 'hostSelected' }).selectedHost).to.equal(undefined);
  });

  it('containerToggled: a collapsed container expanded by the API, closed again; another folded here and unfolded', () => {
    let s = run(loaded(), { type: 'containerToggled', nodeId: 'collapsed:c' });
    expect(s.expand).to.deep.equal(['collapsed:c']);
    expect(addressOf(s, '', q)).to.equal('/networks/n1/topology?view=l3&expand=collapsed:c');
    s = run(s, { type: 'containerToggled', nodeId: 'collapsed:c' });
    expect(s.expand).to.deep.equal(['collapsed:c']); // still collapsed in this graph: opened, not toggled shut
    s = run(start('expand=subnet:s'), { type: 'graphLoaded', graph: graph() }, { type: 'containerToggled', nodeId: 'subnet:s' });
    expect(s.expand).to.deep.equal([]);
    s = run(s, { type: 'containerToggled', nodeId: 'subnet:s' });
    expect([...s.folded]).to.deep.equal(['subnet:s']);
    expect(marksOf(s).get('ip_address:a')).to.deep.equal(['absent']);
    expect([...run(s, { type: 'containerToggled', nodeId: 'subnet:s' }).folded]).to.deep.equal([]);
  });

  it('the change stream: a refresh wanted once per burst, only while live; settled clears it; reads counted', () => {
    let s = run(loaded(), { type: 'streamChanged' });
    expect(s.refreshWanted).to.equal(true);
    expect(reduceMap(s, { type: 'streamChanged' })).to.equal(s);
    s = run(s, { type: 'streamSettled' }, { type: 'liveReadStarted', cause: 'change' }, { type: 'liveReadStarted', cause: 'poll' });
    expect([s.refreshWanted, s.liveReads]).to.deep.equal([false, { change: 1, poll: 1 }]);
    expect(isLive(s)).to.equal(true);
    const fixed = run(start('at=2026-12-01T00:00:00Z'), { type: 'graphLoaded', graph: graph() }, { type: 'streamChanged' });
    expect([isLive(fixed), fixed.refreshWanted]).to.deep.equal([false, false]);
  });

  it('graphRefreshed: a new digest laid out is drawn; the same digest, a pending layout, the history open or a fixed instant are not', () => {
    const s = loaded();
    const fresh = graph({ digest: 'd2' });
    expect(reduceMap(s, { type: 'graphRefreshed', graph: fresh }).graph).to.equal(fresh);
    expect(reduceMap(s, { type: 'graphRefreshed', graph: graph() })).to.equal(s);
    expect(reduceMap(s, { type: 'graphRefreshed', graph: graph({ digest: 'd2', status: 'pending' }) })).to.equal(s);
    const history = run(s, { type: 'timelineLoaded', timeline: timeline(), from: T0 });
    expect(reduceMap(history, { type: 'graphRefreshed', graph: fresh })).to.equal(history);
  });

  it('the history: opened at its last tick and fitted, stepped, sought, in the address, closed back to live and fitted', () => {
    let s = run(loaded(), { type: 'timelineLoaded', timeline: timeline(), from: T0 });
    expect([s.tick, s.timelineFrom, s.fits, fixedInstant(s)]).to.deep.equal([2, T0, 1, T2]);
    expect(line(s)).to.equal(`As of ${T2}`);
    s = run(s, { type: 'tickStepped', by: -1 });
    expect(s.tick).to.equal(1);
    expect(line(s)).to.equal(`As of ${T1} (after 3 changes)`);
    expect(addressOf(s, '', q)).to.equal(`/networks/n1/topology?view=l3&at=${T1}`);
    s = run(s, { type: 'tickSeeked', tick: 0 });
    expect(listedHosts(s).map((x) => x.name)).to.deep.equal(['web']); // db did not exist yet
    expect(marksOf(s).get('ip_address:b')).to.include('absent');
    expect(run(s, { type: 'tickStepped', by: -1 })).to.equal(s); // not before the first tick
    expect(run(s, { type: 'tickSeeked', tick: 99 }).tick).to.equal(2);
    s = run(s, { type: 'timelineClosed' });
    expect([s.timeline, s.tick, s.fits, isLive(s)]).to.deep.equal([undefined, undefined, 2, true]);
    expect(line(s)).to.match(/^Live/);
  });

  it('the history read again (a container opened) stays at its instant; a pending layout is fitted once it arrives', () => {
    let s = run(loaded(), { type: 'timelineLoaded', timeline: timeline(), from: T0 }, { type: 'tickSeeked', tick: 1 });
    s = run(s, { type: 'timelineLoaded', timeline: timeline(), from: T0 });
    expect([s.tick, s.fits]).to.deep.equal([1, 1]);
    s = run(loaded(), { type: 'timelineLoaded', timeline: timeline('pending'), from: T0 });
    expect([s.fits, s.fitWhenReady, line(s)]).to.deep.equal([0, true, 'Laying out the history…']);
    s = run(s, { type: 'timelineLayoutArrived', timeline: { ...timeline(), ticks: [] } });
    expect([s.fits, s.fitWhenReady, s.timeline?.ticks]).to.deep.equal([1, false, [T0, T1, T2]]);
    expect(run(loaded(), { type: 'timelineLayoutArrived', timeline: timeline() }).timeline).to.equal(undefined);
  });

  it('diffLoaded: marks on the interval\'s union, the address naming the interval; without a union, the end instant and why', () => {
    const diff = { from: T0, to: T2, nodes: { added: [node({ id: 'ip_address:b' })], removed: [], changed: [] }, edges: { added: [], removed: [], changed: [] } } as TopologyDiff;
    let s = run(start('view=l3', 'diff'), { type: 'diffLoaded', diff, union: timeline(), tagNames: new Map() });
    expect(marksOf(s).get('ip_address:b')).to.deep.equal(['added']);
    expect([s.tick, fixedInstant(s), line(s)]).to.deep.equal([undefined, T2, `From ${T0} to ${T2}`]);
    expect(addressOf(s, '/networks/n1/topology/diff', q)).to.equal(`/networks/n1/topology/diff?view=l3&from=${T0}&to=${T2}`);
    s = run(start(`view=l3&to=${T2}`, 'diff'), { type: 'diffLoaded', diff, unionError: 'too big', tagNames: new Map() });
    expect(s.at).to.equal(T2);
    expect(s.problem).to.deep.equal({ kind: 'partial', to: T2, reason: 'too big' });
    // The end instant's graph then loads: the reason stays said; a comparison drawn whole clears it.
    s = run(s, { type: 'graphLoaded', graph: graph() });
    expect(s.problem).to.deep.equal({ kind: 'partial', to: T2, reason: 'too big' });
    expect(run(s, { type: 'diffLoaded', diff, union: timeline(), tagNames: new Map() }).problem).to.equal(undefined);
  });

  it('pinned: the positions kept and the pinned ids marked, the status says so', () => {
    const s = run(loaded(), { type: 'pinned', positions: { 'ip_address:a': { x: 5, y: 6 } }, pinned: ['ip_address:a'] });
    expect(s.graph?.layout.positions['ip_address:a']).to.deep.equal({ x: 5, y: 6, width: 10, height: 10 });
    expect(marksOf(s).get('ip_address:a')).to.deep.equal(['pinned']);
    expect(line(s)).to.equal('Pinned a node: it stays where you put it.');
    expect(line(run(s, { type: 'graphRefreshed', graph: graph({ digest: 'd2' }) }))).to.match(/^Live/); // the message lasts until the next drawing
    expect(loaded().graph?.layout.pinned).to.deep.equal([]); // the previous state untouched
  });

  it('errors: a request failed, the history could not be read (offering the last day when it started before)', () => {
    expect(run(loaded(), { type: 'failed', message: 'no', code: 'x' }).problem).to.deep.equal({ kind: 'error', message: 'no', code: 'x' });
    expect(run(loaded(), { type: 'historyFailed', message: 'too big', lastDay: T1 }).problem).to.deep.equal({ kind: 'history', message: 'too big', lastDay: T1 });
    expect(run(loaded(), { type: 'timelineLoaded', timeline: timeline(), from: T0 }, { type: 'failed', message: 'x' }, { type: 'timelineLoaded', timeline: timeline(), from: T0 }).problem).to.equal(undefined);
  });

  it('servicesLoaded, status and moreToggled: kept as said', () => {
    const deps = new Map([['h1', [{ name: 'DNS', role: 'hub' }]]]);
    const s = run(loaded(), { type: 'servicesLoaded', tags: [], serviceTags: new Map(), serviceHosts: new Map(), dependencies: deps }, { type: 'status', text: 'Making the PNG…' }, { type: 'moreToggled', open: true });
    expect([s.dependencies, line(s), s.moreOpen]).to.deep.equal([deps, 'Making the PNG…', true]);
  });

  it('the status names what is drawn: an instant fixed by the address, a failed layout', () => {
    expect(line(run(start('at=2026-12-01T00:00:00Z'), { type: 'graphLoaded', graph: graph() }))).to.equal('As of 2026-12-01T00:00:00Z');
    const failed = { ...graph(), layout: { ...graph().layout, status: 'failed', error: 'elk' } } as Topology;
    expect(line(run(start(), { type: 'graphLoaded', graph: failed }))).to.equal('Layout failed: elk');
  });
});
