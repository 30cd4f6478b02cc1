// The topology API (issue 11) through HTTP, on one small network made through the API: each view,
// `at`, filters, collapse and expand, stable ids and digests, bad input. Plus the pure builder.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { applyCollapse, buildGraph, type Snapshot } from '../../src/modules/topology/graph.js';
import { layoutGraph, placeIncrementally } from '../../src/modules/topology/layout.js';
import { loadSnapshot } from '../../src/modules/topology/service.js';
import { diffGraphs, same, unionOverTime } from '../../src/modules/topology/diff.js';
import { GraphCache } from '../../src/modules/topology/graphCache.js';
import { Db } from '../../src/core/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type Credential } from '../support/client.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { startTopologyLayout } from '../../workers/topologyLayout.js';
import type { Worker } from 'bullmq';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { buildNetwork, type Net } from '../support/network.js';

describe('topology: the network as a graph', () => {
  let app: TestApp;
  let t: Tenant;
  let n: Net;
  const topo = async (query: string, auth: Credential = t.owner) => expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}${query}`, { auth }));
  const byId = (data: any) => new Map<string, any>(data.nodes.map((x: any) => [x.id, x]));

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'topo');
    n = await buildNetwork(app, t.owner, t.defaultNetworkId);
  });
  afterEach(() => app.close());

  it('l3: subnets hold one node per address with the services drawn there; same-host and dependency edges', async () => {
    const data = await topo('');
    expect(data).to.include({ network_id: t.defaultNetworkId, view: 'l3' });
    expect(data.available_views).to.deep.equal(['l3', 'workloads', 'application', 'l2']);
    expect(data.digest).to.match(/^[0-9a-f]{32}$/);
    const nodes = byId(data);
    expect(nodes.get(`subnet:${n.subnetA.id}`)).to.include({ kind: 'subnet', entity_id: n.subnetA.id, parent_id: null, cidr: '10.1.0.0/24', name: 'office' });
    const webA = nodes.get(`ip_address:${n.ip.webA}`);
    expect(webA).to.include({ kind: 'ip_address', parent_id: `subnet:${n.subnetA.id}`, host_id: n.web.id, host_name: 'web', ip_address: '10.1.0.10' });
    // nginx (a port binding without an address) on both of web's addresses; agent (unbound) on the first; metrics on its address.
    expect(webA.services.map((s: any) => s.name)).to.deep.equal(['nginx', 'agent']);
    expect(webA.services[0]).to.deep.equal({ id: n.svc.nginx, name: 'nginx', service_definition: 'Nginx', ports: [{ number: 443, protocol: 'Tcp' }] });
    expect(nodes.get(`ip_address:${n.ip.webB}`).services.map((s: any) => s.name)).to.deep.equal(['nginx', 'metrics']);
    expect(nodes.get(`ip_address:${n.ip.webB}`).parent_id).to.equal(`subnet:${n.subnetB.id}`);
    // A host without addresses is one node of its own; the hidden host is left out and counted.
    expect(nodes.get(`host:${n.bare.id}`)).to.include({ kind: 'host', parent_id: null, label: 'bare' });
    expect(nodes.get(`host:${n.bare.id}`).services.map((s: any) => s.name)).to.deep.equal(['cron']);
    expect([...nodes.values()].some((x) => x.host_id === n.hidden.id)).to.equal(false);
    expect(data.filtered_out).to.include({ hidden_hosts: 1 });

    const edges = data.edges;
    expect(edges.filter((e: any) => e.kind === 'same_host')).to.deep.equal([
      { id: `same_host:${n.ip.webA}:${n.ip.webB}`, kind: 'same_host', source: `ip_address:${n.ip.webA}`, target: `ip_address:${n.ip.webB}`, host_id: n.web.id },
    ]);
    const path = edges.filter((e: any) => e.dependency_id === n.deps.path.id);
    expect(path).to.have.length(1);
    expect(path[0]).to.include({
      kind: 'request_path', source: `ip_address:${n.ip.webA}`, target: `ip_address:${n.ip.dbA}`, color: 'Blue', edge_style: 'Bezier',
      source_service_id: n.svc.nginx, target_service_id: n.svc.postgres,
    });
    const hub = edges.filter((e: any) => e.dependency_id === n.deps.hub.id).map((e: any) => [e.kind, e.source, e.target]);
    expect(hub).to.deep.equal([
      ['hub_and_spoke', `ip_address:${n.ip.dbA}`, `ip_address:${n.ip.webA}`],
      ['hub_and_spoke', `ip_address:${n.ip.dbA}`, `ip_address:${n.ip.webB}`],
    ]);
    for (const e of edges) expect(nodes.has(e.source) && nodes.has(e.target), e.id).to.equal(true);
    // Nothing changed: the same digest. include_hidden shows the hidden host.
    expect((await topo('')).digest).to.equal(data.digest);
    const all = byId(await topo('&include_hidden=true'));
    expect([...all.values()].some((x) => x.host_id === n.hidden.id)).to.equal(true);
  });

  it('workloads, application and l2 views', async () => {
    const w = await topo('&view=workloads');
    const wn = byId(w);
    expect(wn.get(`host:${n.web.id}`)).to.include({ kind: 'host', parent_id: null, label: 'web' });
    expect(wn.get(`service:${n.svc.nginx}`)).to.include({ kind: 'service', parent_id: `host:${n.web.id}`, service_definition: 'Nginx' });
    const kinds = (data: any, kind: string) => data.edges.filter((e: any) => e.kind === kind).map((e: any) => [e.source, e.target]);
    expect(kinds(w, 'hypervisor')).to.deep.equal([[`service:${n.svc.metrics}`, `host:${n.db.id}`]]);
    expect(kinds(w, 'container_runtime')).to.deep.equal([[`service:${n.svc.nginx}`, `service:${n.svc.agent}`]]);
    expect(kinds(w, 'request_path')).to.deep.equal([[`service:${n.svc.nginx}`, `service:${n.svc.postgres}`]]);

    const a = await topo('&view=application');
    expect(a.nodes.map((x: any) => [x.id, x.parent_id])).to.deep.equal([
      [`tag:${n.app.id}`, null], [`service:${n.svc.nginx}`, `tag:${n.app.id}`], [`service:${n.svc.postgres}`, `tag:${n.app.id}`],
    ]);
    // Only members drawn in the view are joined: the hub's spoke to metrics (no application tag) is not.
    expect(a.edges.map((e: any) => e.kind).sort()).to.deep.equal(['hub_and_spoke', 'request_path']);

    const l2 = await topo('&view=l2');
    expect(l2.nodes.filter((x: any) => x.kind === 'interface').map((x: any) => x.label)).to.deep.equal(['eth0', 'eth0']);
    expect(l2.edges).to.have.length(1);
    expect(l2.edges[0].kind).to.equal('physical_link');
  });

  it('at: the graph as of an earlier instant, from history (a host deleted since is there)', async () => {
    const before = await topo('');
    const instant = before.as_of;
    expectOk(await call(app.url, 'DELETE', `/api/v1/dependencies/${n.deps.path.id}`, { auth: t.owner }));
    expectOk(await call(app.url, 'DELETE', `/api/v1/dependencies/${n.deps.hub.id}`, { auth: t.owner }));
    expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${n.db.id}`, { auth: t.owner }));
    const now = await topo('');
    expect(byId(now).has(`ip_address:${n.ip.dbA}`)).to.equal(false);
    expect(now.digest).to.not.equal(before.digest);
    const then = await topo(`&at=${encodeURIComponent(instant)}`);
    expect(then.as_of).to.equal(instant);
    expect(byId(then).get(`ip_address:${n.ip.dbA}`)).to.include({ host_name: 'db', ip_address: '10.1.0.20' });
    expect(then.digest).to.equal(before.digest);
    expect(then.nodes).to.deep.equal(before.nodes);
    expect(then.edges).to.deep.equal(before.edges);
  });

  it('tag_ids keeps the hosts carrying one of the tags', async () => {
    const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'prod', color: 'Red' } }), 201);
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${n.bare.id}`, { auth: t.owner, body: { id: n.bare.id, name: 'bare', hidden: false, tags: [tag.id] } }));
    const data = await topo(`&tag_ids=${tag.id},${randomUUID()}`);
    expect(data.nodes.filter((x: any) => x.kind !== 'subnet').map((x: any) => x.id)).to.deep.equal([`host:${n.bare.id}`]);
    expect(data.filtered_out).to.include({ hosts_without_tag: 2, hidden_hosts: 1 });
  });

  it('max_nodes collapses the biggest containers into one node with counts; expand keeps chosen ones open', async () => {
    // Element nodes: office holds web A and db A, servers holds web B, plus the bare host: 4.
    const data = await topo('&max_nodes=3');
    const office = byId(data).get(`subnet:${n.subnetA.id}`);
    expect(office).to.deep.equal({
      id: `subnet:${n.subnetA.id}`, kind: 'collapsed', entity_id: n.subnetA.id, parent_id: null, label: 'office', collapsed_kind: 'subnet', counts: { ip_address: 2 },
    });
    expect(data.filtered_out).to.include({ collapsed_containers: 1, collapsed_nodes: 2, over_budget: 0 });
    for (const e of data.edges) expect(byId(data).has(e.source) && byId(data).has(e.target), e.id).to.equal(true);
    // Edges into the collapsed subnet end at it: web B's same-host edge now joins it.
    expect(data.edges.some((e: any) => e.source === `subnet:${n.subnetA.id}` && e.target === `ip_address:${n.ip.webB}`)).to.equal(true);

    // The budgeted read (SQL counts, only the open hosts drawn) answers what drawing everything
    // and collapsing it answers, here and as of an earlier instant; a host with no address at all is drawn too.
    const lone = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'no address' } }), 201);
    expect(byId(await topo('&max_nodes=3')).has(`host:${lone.id}`)).to.equal(true);
    for (const [q, at] of [['&max_nodes=3', undefined], [`&max_nodes=2&expand=subnet:${n.subnetB.id}&include_hidden=true`, data.as_of]] as const) {
      const answered = await topo(`${q}${at ? `&at=${encodeURIComponent(at)}` : ''}`);
      const params = new URLSearchParams(q.slice(1));
      const full = buildGraph(await loadSnapshot(new Db(app.services.orm.em.fork()), t.orgId, t.defaultNetworkId, at), 'l3', {
        maxNodes: Number(params.get('max_nodes')), expand: params.get('expand') ? [params.get('expand')!] : undefined, includeHidden: params.get('include_hidden') === 'true',
      });
      const sort = (xs: any[]) => [...xs].sort((a, b) => a.id.localeCompare(b.id));
      expect(sort(answered.nodes), q).to.deep.equal(sort(full.nodes));
      expect(sort(answered.edges), q).to.deep.equal(sort(full.edges));
      expect(answered.filtered_out, q).to.deep.equal(full.filtered_out);
    }

    const opened = await topo(`&max_nodes=3&expand=subnet:${n.subnetA.id}`);
    expect(byId(opened).get(`subnet:${n.subnetA.id}`).kind).to.equal('subnet');
    expect(byId(opened).get(`subnet:${n.subnetB.id}`).kind).to.equal('collapsed');
  });

  it('layout: pending at once, laid out by the topology-layout worker (real BullMQ), cached by digest; pins laid over every layout', async () => {
    const services = workerServicesFor(app);
    let worker: Worker | undefined;
    try {
      const first = await topo('');
      expect(first.layout).to.deep.equal({ status: 'pending', positions: {}, routes: {}, pinned: [] });
      expect(await services.queues.topologyLayout.getJobCounts('waiting', 'prioritized')).to.include({ waiting: 1 });
      worker = await startTopologyLayout(services);
      const ready = await waitFor('layout ready', async () => {
        const data = await topo('');
        return data.layout.status === 'ready' && data;
      });
      expect(ready.digest).to.equal(first.digest);
      expect(Object.keys(ready.layout.positions).sort()).to.deep.equal(ready.nodes.map((x: any) => x.id).sort());
      // Each edge's route around the boxes (edgeRoutes.ts), stored with the positions: bend points, or none for a clear straight line.
      expect(ready.edges.length).to.be.greaterThan(0);
      expect(Object.keys(ready.layout.routes).sort()).to.deep.equal(ready.edges.filter((e: any) => e.source !== e.target).map((e: any) => e.id).sort());
      for (const r of Object.values(ready.layout.routes as Record<string, Array<{ x: number; y: number }>>)) for (const p of r) expect(p).to.have.all.keys('x', 'y');
      // Containers enclose their elements.
      const box = (id: string) => ready.layout.positions[id];
      const office = box(`subnet:${n.subnetA.id}`);
      const webA = box(`ip_address:${n.ip.webA}`);
      expect(webA.x).to.be.at.least(office.x);
      expect(webA.y + webA.height).to.be.at.most(office.y + office.height);
      // Asked again, unchanged: served from the cache, no new job.
      expect((await topo('')).layout).to.deep.equal(ready.layout);
      expect((await services.queues.topologyLayout.getJobs(['completed', 'waiting', 'active'])).length).to.equal(1);

      // A pin: the node stays where the user put it, in this layout and in the next one.
      const pinned = `ip_address:${n.ip.dbA}`;
      const pinnedRes = expectOk(await call(app.url, 'PUT', '/api/v1/topology/positions', { auth: t.owner, body: { network_id: t.defaultNetworkId, view: 'l3', positions: { [pinned]: { x: -500, y: 42.5 } } } }));
      expect(pinnedRes.pinned).to.deep.equal([pinned]);
      const withPin = await topo('');
      expect(withPin.layout.pinned).to.deep.equal([pinned]);
      expect(withPin.layout.positions[pinned]).to.include({ x: -500, y: 42.5 });
      expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'newcomer' } }), 201);
      const relaid = await waitFor('new layout ready', async () => {
        const data = await topo('');
        return data.digest !== ready.digest && data.layout.status === 'ready' && data;
      });
      expect(relaid.layout.positions[pinned]).to.include({ x: -500, y: 42.5 });
      expect(relaid.layout.positions).to.have.property(`host:${relaid.nodes.find((x: any) => x.label === 'newcomer').entity_id}`);
      // The map did not move: every element laid out before is where it was (placed, not laid out afresh).
      for (const [id, p] of Object.entries(ready.layout.positions as Record<string, any>)) {
        if (id !== pinned && !id.startsWith('subnet:')) expect(relaid.layout.positions[id], id).to.deep.equal(p);
      }
      // Pins keep their history: placed, moved, unpinned.
      expectOk(await call(app.url, 'PUT', '/api/v1/topology/positions', { auth: t.owner, body: { network_id: t.defaultNetworkId, view: 'l3', positions: { [pinned]: { x: -400, y: 0 } } } }));
      // Unpinned: the worker's position again. A Viewer may read but not pin.
      expect(expectOk(await call(app.url, 'DELETE', `/api/v1/topology/positions?network_id=${t.defaultNetworkId}&view=l3`, { auth: t.owner })).pinned).to.deep.equal([]);
      expect((await topo('')).layout.pinned).to.deep.equal([]);
      const states = await app.services.orm.em.fork().execute<Array<{ x: number; open: boolean }>>(
        `select x, valid_to is null as open from topology_pins_history where node_id = ? order by valid_from`, [pinned]);
      expect(states.map((r) => [r.x, r.open])).to.deep.equal([[-500, false], [-400, false]]);
      const viewer = await createUser(app.url, t.owner, 'Viewer', [t.defaultNetworkId]);
      expect((await topo('', viewer.auth)).layout.status).to.equal('ready');
      expectError(await call(app.url, 'PUT', '/api/v1/topology/positions', { auth: viewer.auth, body: { network_id: t.defaultNetworkId, view: 'l3', positions: { [pinned]: { x: 1, y: 1 } } } }), 403, 'auth_permission_denied');
    } finally {
      await worker?.close();
      await services.close();
    }
  });

  it('diff and timeline across real changes: a host renamed, a service added to an address, a dependency recoloured, a host deleted', async () => {
    const t0 = (await topo('')).as_of;
    const webBody = (name: string) => ({ id: n.web.id, name, hidden: false, tags: [] });
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${n.web.id}`, { auth: t.owner, body: webBody('web-1') }));
    const t1 = (await topo('')).as_of;
    expectOk(await call(app.url, 'POST', '/api/v1/services', { auth: t.owner, body: { host_id: n.db.id, name: 'pgbouncer', service_definition: 'PgBouncer', bindings: [] } }), 201);
    expectOk(await call(app.url, 'PUT', `/api/v1/dependencies/${n.deps.path.id}`, { auth: t.owner, body: { ...n.deps.path, color: 'Green' } }));
    expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${n.bare.id}`, { auth: t.owner }));
    const t2 = (await topo('')).as_of;

    const diff = expectOk(await call(app.url, 'GET', `/api/v1/topology/diff?network_id=${t.defaultNetworkId}&from=${encodeURIComponent(t0)}&to=${encodeURIComponent(t2)}`, { auth: t.owner }));
    expect(diff).to.include({ from: t0, to: t2, view: 'l3' });
    expect(diff.nodes.removed.map((x: any) => x.id)).to.deep.equal([`host:${n.bare.id}`]);
    expect(diff.nodes.added).to.deep.equal([]);
    const changed = new Map<string, any>(diff.nodes.changed.map((c: any) => [c.id, c.changes]));
    expect(changed.get(`ip_address:${n.ip.webA}`).host_name).to.deep.equal(['web', 'web-1']);
    expect(changed.get(`ip_address:${n.ip.webA}`).label).to.deep.equal(['web 10.1.0.10', 'web-1 10.1.0.10']);
    const [before, after] = changed.get(`ip_address:${n.ip.dbA}`).services;
    expect(after.map((x: any) => x.name)).to.deep.equal([...before.map((x: any) => x.name), 'pgbouncer']);
    const recoloured = diff.edges.changed.find((c: any) => c.id.startsWith(`dependency:${n.deps.path.id}:`));
    expect(recoloured.changes.color).to.deep.equal(['Blue', 'Green']);
    // Nothing since t2: an empty diff up to now. from after to: 400.
    await new Promise((r) => setTimeout(r, 5));
    const none = expectOk(await call(app.url, 'GET', `/api/v1/topology/diff?network_id=${t.defaultNetworkId}&from=${encodeURIComponent(t2)}`, { auth: t.owner }));
    expect([none.nodes.added, none.nodes.removed, none.nodes.changed, none.edges.changed].flat()).to.deep.equal([]);
    expectError(await call(app.url, 'GET', `/api/v1/topology/diff?network_id=${t.defaultNetworkId}&from=${encodeURIComponent(t2)}&to=${encodeURIComponent(t0)}`, { auth: t.owner }), 400, 'validation_failed');

    const timeline = expectOk(await call(app.url, 'GET', `/api/v1/topology/timeline?network_id=${t.defaultNetworkId}&from=${encodeURIComponent(t0)}&to=${encodeURIComponent(t2)}`, { auth: t.owner }));
    expect(timeline.ticks[0]).to.equal(t0);
    expect(timeline.ticks.length).to.be.at.least(4); // the rename, the service, the colour, the deletion (and their cascades)
    expect(timeline.ticks.some((x: string) => x > t0 && x <= t1)).to.equal(true);
    const bare = timeline.nodes.find((x: any) => x.id === `host:${n.bare.id}`);
    expect(bare.intervals).to.have.length(1);
    expect(bare.intervals[0].from).to.equal(t0);
    expect(bare.intervals[0].to > t1, `${bare.intervals[0].to} after ${t1}`).to.equal(true);
    const webA = timeline.nodes.find((x: any) => x.id === `ip_address:${n.ip.webA}`);
    expect(webA.intervals).to.deep.equal([{ from: t0, to: null }]);
    expect(webA.host_name).to.equal('web-1'); // as last drawn
    expect(timeline.layout.status).to.equal('pending');
    // Shaped as the view: over max_nodes, the biggest container is one node with its own intervals,
    // and an edge it stands for exists whenever one of its edges did; expand keeps it open.
    const tl = (q: string) => call(app.url, 'GET', `/api/v1/topology/timeline?network_id=${t.defaultNetworkId}&from=${encodeURIComponent(t0)}&to=${encodeURIComponent(t2)}${q}`, { auth: t.owner });
    const shaped = expectOk(await tl('&max_nodes=3'));
    const office = shaped.nodes.find((x: any) => x.id === `subnet:${n.subnetA.id}`);
    expect(office).to.include({ kind: 'collapsed', collapsed_kind: 'subnet' });
    expect(office.counts).to.deep.equal({ ip_address: 2 });
    expect(office.intervals).to.deep.equal([{ from: t0, to: null }]);
    expect(shaped.nodes.some((x: any) => x.parent_id === `subnet:${n.subnetA.id}`)).to.equal(false);
    expect(shaped.filtered_out).to.include({ collapsed_containers: 1, collapsed_nodes: 2 });
    const ids = new Set(shaped.nodes.map((x: any) => x.id));
    for (const e of shaped.edges) {
      expect(ids.has(e.source) && ids.has(e.target), e.id).to.equal(true);
      expect(e.intervals.length, e.id).to.be.greaterThan(0);
    }
    expect(shaped.digest).to.not.equal(timeline.digest);
    const opened = expectOk(await tl(`&max_nodes=3&expand=subnet:${n.subnetA.id}`));
    expect(opened.nodes.find((x: any) => x.id === `ip_address:${n.ip.webA}`).intervals).to.deep.equal([{ from: t0, to: null }]);
    expectError(await tl('&max_nodes=0'), 400, 'validation_failed');
  });

  it('diff from history: drawing only the hosts that changed, or that an edge joins to them, answers what two whole drawings compared answer, in every view', async () => {
    const t0 = (await topo('')).as_of;
    // db renamed (a member of both dependencies, a VM under web's service), a subnet renamed, a host added, a dependency recoloured.
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${n.db.id}`, { auth: t.owner, body: { id: n.db.id, name: 'db-1', hidden: false, tags: [], virtualization: n.db.virtualization ?? { type: 'Proxmox', details: { service_id: n.svc.metrics, vm_id: 101 } } } }));
    expectOk(await call(app.url, 'PUT', `/api/v1/subnets/${n.subnetB.id}`, { auth: t.owner, body: { ...n.subnetB, name: 'dmz' } }));
    expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: t.defaultNetworkId, name: 'new', ip_addresses: [{ subnet_id: n.subnetA.id, ip_address: '10.1.0.30' }] } }), 201);
    expectOk(await call(app.url, 'PUT', `/api/v1/dependencies/${n.deps.hub.id}`, { auth: t.owner, body: { ...n.deps.hub, color: 'Green' } }));
    const t1 = (await topo('')).as_of;
    const db = new Db(app.services.orm.em.fork());
    const sort = (xs: any[]) => [...xs].sort((a, b) => a.id.localeCompare(b.id));
    const sorted = (d: any) => ({ nodes: { added: sort(d.nodes.added), removed: sort(d.nodes.removed), changed: sort(d.nodes.changed) }, edges: { added: sort(d.edges.added), removed: sort(d.edges.removed), changed: sort(d.edges.changed) } });
    for (const view of ['l3', 'workloads', 'application', 'l2'] as const) {
      const answered = expectOk(await call(app.url, 'GET', `/api/v1/topology/diff?network_id=${t.defaultNetworkId}&view=${view}&from=${encodeURIComponent(t0)}&to=${encodeURIComponent(t1)}`, { auth: t.owner }));
      const draw = async (at: string) => buildGraph(await loadSnapshot(db, t.orgId, t.defaultNetworkId, at), view, { maxNodes: Number.MAX_SAFE_INTEGER });
      const whole = diffGraphs(await draw(t0), await draw(t1));
      expect(sorted(answered), view).to.deep.equal(sorted(whole));
      expect([...whole.nodes.added, ...whole.nodes.changed, ...whole.edges.changed].length, view).to.be.greaterThan(0);
      // The timeline reads each history table once for all its instants: the same union as a
      // whole drawing at every tick.
      const timeline = expectOk(await call(app.url, 'GET', `/api/v1/topology/timeline?network_id=${t.defaultNetworkId}&view=${view}&from=${encodeURIComponent(t0)}&to=${encodeURIComponent(t1)}&max_nodes=5000`, { auth: t.owner }));
      expect(timeline.ticks.length, view).to.be.greaterThan(2);
      const drawings = [];
      for (const at of timeline.ticks as string[]) drawings.push({ at, graph: await draw(at) });
      const union = unionOverTime(drawings, null);
      expect(sort(timeline.nodes), view).to.deep.equal(sort(union.nodes));
      expect(sort(timeline.edges), view).to.deep.equal(sort(union.edges));
    }
  });

  it('exports: SVG, GraphML and draw.io are well-formed XML naming every host; Mermaid has a subgraph per subnet', async () => {
    const parser = new XMLParser({ ignoreAttributes: false });
    const hostNames = ['web', 'db', 'bare'];
    const files: Record<string, string> = {};
    for (const [format, type, ext] of [['svg', 'image/svg+xml', 'svg'], ['graphml', 'application/graphml+xml', 'graphml'], ['drawio', 'application/vnd.jgraph.mxfile', 'drawio'], ['mermaid', 'text/vnd.mermaid', 'mmd']]) {
      const res = await fetch(`${app.url}/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=${format}`, { headers: { Cookie: t.owner.cookie! } });
      expect(res.status, format).to.equal(200);
      expect(res.headers.get('content-type'), format).to.match(new RegExp(`^${type.replace('+', '\\+')}`));
      expect(res.headers.get('content-disposition'), format).to.match(new RegExp(`^attachment; filename="topology-default-l3-\\d{4}-\\d\\d-\\d\\d\\.${ext}"$`));
      files[format] = await res.text();
    }
    for (const format of ['svg', 'graphml', 'drawio']) {
      expect(XMLValidator.validate(files[format]!), format).to.equal(true);
      for (const name of hostNames) expect(files[format], `${format} names ${name}`).to.contain(name);
    }
    const svg = parser.parse(files.svg!).svg;
    expect(svg['@_xmlns']).to.equal('http://www.w3.org/2000/svg');
    expect(files.svg).to.not.match(/(href|src)="(https?:)?\/\//); // standalone: no external reference
    expect(files.svg).to.contain('stroke="#3b82f6"'); // the Blue dependency in its colour
    const graphml = parser.parse(files.graphml!).graphml;
    expect(graphml.graph.node.length ?? 1).to.be.greaterThan(1);
    expect(files.graphml).to.contain('<data key="x">');
    const drawio = parser.parse(files.drawio!).mxfile.diagram.mxGraphModel.root.mxCell;
    expect(drawio.filter((c: any) => c['@_vertex'] === '1').length).to.be.greaterThan(4);
    expect(files.mermaid).to.match(/^flowchart LR\n/);
    expect((files.mermaid!.match(/^  subgraph /gm) ?? []).length).to.equal(2);
    expect(files.mermaid).to.contain('"office"');
    expectError(await call(app.url, 'GET', `/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=pdf`, { auth: t.owner }), 400, 'validation_failed');
  });

  it('answers over 1 KB compressed when the client accepts gzip or br', async () => {
    for (const encoding of ['gzip', 'br']) {
      const res = await fetch(`${app.url}/api/v1/topology?network_id=${t.defaultNetworkId}`, { headers: { Cookie: t.owner.cookie!, 'Accept-Encoding': encoding } });
      expect(res.headers.get('content-encoding')).to.equal(encoding);
      expect((await res.json()).data.nodes.length).to.be.greaterThan(3);
    }
  });

  it('bad input is a 400 with the field; another organization’s network is 404; a Viewer reads', async () => {
    for (const q of ['&view=l7', '&max_nodes=0', '&max_nodes=abc', '&expand=subnet', '&tag_ids=nope', '&at=2999-01-01T00:00:00Z', '&include_hidden=maybe']) {
      const res = await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}${q}`, { auth: t.owner });
      expect(res.status, q).to.equal(400);
      expect(res.body.code, q).to.match(/^validation_/);
    }
    expectError(await call(app.url, 'GET', '/api/v1/topology', { auth: t.owner }), 400, 'validation_failed');
    expectError(await call(app.url, 'GET', '/api/v1/topology?network_id=not-a-uuid', { auth: t.owner }), 400, 'validation_failed');
    const other = await registerTenant(app.url, 'other');
    expectError(await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}`, { auth: other.owner }), 404, 'entity_not_found');
    expectError(await call(app.url, 'GET', `/api/v1/topology?network_id=${randomUUID()}`, { auth: t.owner }), 404, 'entity_not_found');
  });
});

describe('topology: a drawn graph served again while its network is unchanged', () => {
  const TOKEN = 'topology-cache-metrics-token';
  let app: TestApp;
  let t: Tenant;
  let n: Net;
  beforeEach(async () => {
    app = await startTestApp({ metricsToken: TOKEN });
    t = await registerTenant(app.url, 'cache');
    n = await buildNetwork(app, t.owner, t.defaultNetworkId);
  });
  afterEach(() => app.close());
  const topo = async (query = '') => expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}${query}`, { auth: t.owner }));
  /** This process's counts of topology_graph_cache_total by result, from /metrics. */
  const lookups = async () => {
    const res = await call(app.url, 'GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });
    const count = (result: string) => Number(new RegExp(`^topology_graph_cache_total\\{result="${result}"\\} (\\d+)`, 'm').exec(String(res.body))?.[1] ?? 0);
    return { hit: count('hit'), miss: count('miss'), bypass: count('bypass') };
  };
  const labelsOf = (data: any) => data.nodes.filter((x: any) => x.host_id === n.web.id).map((x: any) => x.host_name);

  it('answers the same graph from the cache, and a change of any kind (API, tag, direct SQL) is in the very next answer', async () => {
    const first = await topo();
    const second = await topo();
    expect(await lookups()).to.deep.include({ hit: 1, miss: 1 });
    expect(second.nodes).to.deep.equal(first.nodes);
    expect(second.edges).to.deep.equal(first.edges);
    expect(second.digest).to.equal(first.digest);
    expect(Date.parse(second.as_of)).to.be.greaterThanOrEqual(Date.parse(first.as_of)); // the graph as of now, not as of the first drawing
    // Other queries are other entries: another view, the hidden hosts.
    await topo('&view=workloads');
    await topo('&include_hidden=true');
    expect(await lookups()).to.deep.include({ hit: 1, miss: 3 });

    // Renamed through the API: the next answer has the new name (the change's event moved the version).
    expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${n.web.id}`, { auth: t.owner, body: { id: n.web.id, name: 'web-renamed', hidden: false, tags: [] } }));
    const renamed = await topo();
    expect(labelsOf(renamed)).to.deep.equal(['web-renamed', 'web-renamed']);
    expect(renamed.digest).to.not.equal(first.digest);
    // Written behind the API's back, in SQL: the history triggers number it all the same.
    await new Db(app.services.orm.em.fork()).query(`update hosts set name = 'web-sql' where id = ?`, [n.web.id]);
    expect(labelsOf(await topo())).to.deep.equal(['web-sql', 'web-sql']);
    // An organization-level change (the application tag renamed) reaches the network's views too.
    const tagLabel = async () => (await topo('&view=application')).nodes.find((x: any) => x.kind === 'tag').label;
    expect(await tagLabel()).to.equal('shop');
    const tag = (await topo('&view=application')).nodes.find((x: any) => x.kind === 'tag');
    expectOk(await call(app.url, 'PUT', `/api/v1/tags/${tag.entity_id}`, { auth: t.owner, body: { name: 'store', color: 'Teal', is_application: true } }));
    expect(await tagLabel()).to.equal('store');
    await topo(); // drawn again: the rename moved the organization's version
    const before = await lookups();
    await topo();
    expect(await lookups()).to.deep.include({ hit: before.hit + 1, miss: before.miss });
    // Pins are not part of the cached drawing: pinned now, pinned in the next (cached) answer.
    const pinned = `ip_address:${n.ip.webA}`;
    expectOk(await call(app.url, 'PUT', '/api/v1/topology/positions', { auth: t.owner, body: { network_id: t.defaultNetworkId, view: 'l3', positions: { [pinned]: { x: 7, y: 8 } } } }));
    const pinnedAnswer = await topo();
    expect(pinnedAnswer.layout.pinned).to.deep.equal([pinned]);
    expect(await lookups()).to.deep.include({ hit: before.hit + 2 });
    // A change in another network of the organization leaves this one's version as it was.
    const other = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'elsewhere' } }), 201);
    expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: other.id, name: 'far' } }), 201);
    await topo();
    expect(await lookups()).to.deep.include({ hit: before.hit + 3, miss: before.miss });
  });
});

describe('topology: graph cache (pure)', () => {
  it('serves an entry only under its version, evicts the least recently used past its weight, refuses one too heavy, and counts', () => {
    const seen: string[] = [];
    const cache = new GraphCache<string>(40, (r) => seen.push(r)); // one entry may weigh at most 10
    cache.set('a', '1', 'A', 10);
    cache.set('b', '1', 'B', 10);
    cache.set('c', '1', 'C', 10);
    expect(cache.get('a', '1')).to.equal('A'); // a is now the most recently used
    expect(cache.get('a', '2')).to.equal(undefined); // another version: drawn again
    cache.set('d', '1', 'D', 10);
    cache.set('e', '1', 'E', 10); // 50 > 40: b, the least recently used, goes
    expect(cache.get('b', '1')).to.equal(undefined);
    expect([cache.get('a', '1'), cache.get('c', '1'), cache.get('e', '1')]).to.deep.equal(['A', 'C', 'E']);
    cache.set('f', '1', 'F', 11); // over a quarter of the whole: not kept
    expect(cache.get('f', '1')).to.equal(undefined);
    cache.set('g', undefined, 'G', 1); // no version (a change waits in the outbox): not kept
    expect(cache.get('g', undefined)).to.equal(undefined);
    expect(seen).to.deep.equal(['hit', 'miss', 'miss', 'hit', 'hit', 'hit', 'miss', 'bypass']);
  });
});

describe('topology: graph builder (pure)', () => {
  it('compares node fields as JSON values: nested arrays and objects, key order and undefined fields ignored', () => {
    const services = [{ id: 's', name: 'ssh', ports: [{ number: 22, protocol: 'Tcp' }] }];
    expect(same(services, [{ name: 'ssh', id: 's', ports: [{ protocol: 'Tcp', number: 22 }] }])).to.equal(true);
    expect(same(services, [{ id: 's', name: 'ssh', ports: [{ number: 2222, protocol: 'Tcp' }] }])).to.equal(false);
    expect(same(services, [...services, ...services])).to.equal(false);
    expect(same({ a: 1, b: undefined }, { a: 1 })).to.equal(true);
    expect(same({ a: 1 }, { a: 1, b: null })).to.equal(false);
    expect(same([], {})).to.equal(false);
    expect(same(null, {})).to.equal(false);
    const g = diffGraphs({ nodes: [{ id: 'n', kind: 'k', entity_id: null, parent_id: null, label: 'a', services }], edges: [] },
      { nodes: [{ id: 'n', kind: 'k', entity_id: null, parent_id: null, label: 'a', services: [{ ...services[0]!, name: 'sshd' }] }], edges: [] });
    expect(g.nodes.changed).to.deep.equal([{ id: 'n', kind: 'k', changes: { services: [services, [{ ...services[0]!, name: 'sshd' }]] } }]);
  });
  const empty: Snapshot = { subnets: [], hosts: [], ipAddresses: [], ports: [], services: [], bindings: [], interfaces: [], dependencies: [], tags: [] };
  it('collapsing a timeline\'s union: a merged edge exists whenever one of its edges did (intervals joined where they touch or overlap)', () => {
    const node = (id: string, parent: string | null, intervals: unknown) => ({ id, kind: parent ? 'ip_address' : 'subnet', entity_id: null, parent_id: parent, label: id, intervals });
    const nodes = [node('s', null, [{ from: 't0', to: null }]), node('a', 's', [{ from: 't0', to: null }]), node('b', 's', [{ from: 't0', to: null }]), node('x', null, [{ from: 't0', to: null }])];
    const edge = (id: string, source: string, intervals: unknown) => ({ id, kind: 'request_path', source, target: 'x', dependency_id: 'd', intervals });
    const edges = [
      edge('ax', 'a', [{ from: 't1', to: 't3' }, { from: 't6', to: 't7' }]),
      edge('bx', 'b', [{ from: 't2', to: 't4' }, { from: 't4', to: 't5' }, { from: 't8', to: null }]),
    ];
    const { nodes: kept, edges: merged } = applyCollapse(nodes, edges, new Map([['s', { ip_address: 2 }]]));
    expect(kept.find((x) => x.id === 's')).to.deep.include({ kind: 'collapsed', intervals: [{ from: 't0', to: null }] });
    expect(merged).to.have.length(1);
    expect(merged[0]!.intervals).to.deep.equal([{ from: 't1', to: 't5' }, { from: 't6', to: 't7' }, { from: 't8', to: null }]);
  });

  it('a dependency over binding members draws between the services of those bindings, in member order', () => {
    const s: Snapshot = {
      ...empty,
      hosts: [{ id: 'h1', name: 'a', tags: [] }, { id: 'h2', name: 'b', tags: [] }],
      services: [{ id: 's1', host_id: 'h1', name: 'x', position: 0 }, { id: 's2', host_id: 'h2', name: 'y', position: 0 }],
      bindings: [{ id: 'b1', service_id: 's1', type: 'Port', port_id: null, ip_address_id: null }, { id: 'b2', service_id: 's2', type: 'Port', port_id: null, ip_address_id: null }],
      dependencies: [{ id: 'd', name: 'd', dependency_type: 'RequestPath', color: 'Blue', edge_style: 'Straight', members: { type: 'Bindings', binding_ids: ['b2', 'b1'] } }],
    };
    const g = buildGraph(s, 'workloads', { maxNodes: 100 });
    expect(g.edges.map((e) => [e.source, e.target])).to.deep.equal([['service:s2', 'service:s1']]);
  });
  it('lays out many containers with dependency edges across them (elk refused this with per-container options)', async () => {
    const subnets = Array.from({ length: 10 }, (_, i) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, cidr: `10.${i}.0.0/24`, name: `s${i}` }));
    const hosts = Array.from({ length: 60 }, (_, i) => ({ id: `h${i}`, name: `host-${i}`, tags: [] }));
    const s: Snapshot = {
      ...empty, subnets, hosts,
      ipAddresses: hosts.map((h, i) => ({ id: `ip${i}`, host_id: h.id, subnet_id: subnets[i % 10]!.id, ip_address: `10.${i % 10}.0.${i}`, position: 0 })),
      services: hosts.map((h, i) => ({ id: `s${i}`, host_id: h.id, name: `svc-${i}`, position: 0 })),
      dependencies: [{ id: 'd', name: 'd', dependency_type: 'RequestPath', color: 'Blue', edge_style: 'Bezier', members: { type: 'Services', service_ids: ['s0', 's11', 's22', 's33'] } }],
    };
    const g = buildGraph(s, 'l3', { maxNodes: 1000 });
    const positions = await layoutGraph(g.nodes, g.edges);
    expect(Object.keys(positions).sort()).to.deep.equal(g.nodes.map((x) => x.id).sort());
  });

  it('lays a big subnet out as a block, not a column: its box is at most 4× as tall as it is wide, and the elements inside it overlap nothing', async () => {
    const subnet = { id: '00000000-0000-4000-8000-000000000001', cidr: '10.0.0.0/16', name: 'big' };
    const hosts = Array.from({ length: 200 }, (_, i) => ({ id: `h${i}`, name: `host-${i}`, tags: [] }));
    const s: Snapshot = {
      ...empty, subnets: [subnet], hosts,
      ipAddresses: hosts.flatMap((h, i) => [0, 1].map((k) => ({ id: `ip${i}-${k}`, host_id: h.id, subnet_id: subnet.id, ip_address: `10.0.${k}.${i}`, position: k }))),
    };
    const g = buildGraph(s, 'l3', { maxNodes: 1000 });
    const positions = await layoutGraph(g.nodes, g.edges);
    const box = positions[`subnet:${subnet.id}`]!;
    expect(box.height / box.width).to.be.within(0.25, 4);
    const elements = g.nodes.filter((x) => x.parent_id).map((x) => positions[x.id]!);
    for (const e of elements) expect(e.x >= box.x && e.y >= box.y && e.x + e.width <= box.x + box.width && e.y + e.height <= box.y + box.height).to.equal(true);
    const sorted = [...elements].sort((a, b) => a.x - b.x || a.y - b.y);
    for (let i = 0; i < sorted.length; i++) {
      for (let j = i + 1; j < sorted.length && sorted[j]!.x < sorted[i]!.x + sorted[i]!.width; j++) {
        const [a, b] = [sorted[i]!, sorted[j]!];
        expect(a.y + a.height <= b.y || b.y + b.height <= a.y, 'overlap').to.equal(true);
      }
    }
  });

  it('a later layout keeps every node where it was and places a new one below its neighbour, inside its container, overlapping nothing', async () => {
    const subnets = [0, 1].map((i) => ({ id: `00000000-0000-4000-8000-00000000000${i}`, cidr: `10.${i}.0.0/24`, name: `s${i}` }));
    const snapshot = (hostCount: number): Snapshot => {
      const hosts = Array.from({ length: hostCount }, (_, i) => ({ id: `h${i}`, name: `host-${i}`, tags: [] }));
      return {
        ...empty, subnets, hosts,
        ipAddresses: hosts.map((h, i) => ({ id: `ip${i}`, host_id: h.id, subnet_id: subnets[i % 2]!.id, ip_address: `10.${i % 2}.0.${i}`, position: 0 })),
        services: hosts.map((h, i) => ({ id: `s${i}`, host_id: h.id, name: `svc-${i}`, position: 0 })),
        // The new host's service (s10) depends on s2's: its neighbour, in the same subnet.
        dependencies: [{ id: 'd', name: 'd', dependency_type: 'RequestPath', color: 'Blue', edge_style: 'Bezier', members: { type: 'Services', service_ids: ['s2', 's10'] } }],
      };
    };
    const before = buildGraph(snapshot(10), 'l3', { maxNodes: 1000 });
    const laid = await layoutGraph(before.nodes, before.edges);
    const after = buildGraph(snapshot(11), 'l3', { maxNodes: 1000 });
    const placed = placeIncrementally(after.nodes, after.edges, laid)!;
    // Each element where it was, or moved with its whole container (pushed down by the one that grew to hold the new node).
    for (const n of before.nodes.filter((x) => x.kind !== 'subnet')) {
      const shift = placed[n.parent_id!]!.y - laid[n.parent_id!]!.y;
      expect(placed[n.id], n.id).to.deep.equal({ ...laid[n.id], y: laid[n.id]!.y + shift });
    }
    expect(placed[`subnet:${subnets[0]!.id}`]).to.include({ x: laid[`subnet:${subnets[0]!.id}`]!.x, y: laid[`subnet:${subnets[0]!.id}`]!.y });
    const added = placed['ip_address:ip10']!;
    const neighbour = placed['ip_address:ip2']!;
    const subnet = placed[`subnet:${subnets[0]!.id}`]!;
    expect(added.x).to.equal(neighbour.x);
    expect(added.y).to.be.greaterThan(neighbour.y);
    expect(added.y + added.height).to.be.at.most(subnet.y + subnet.height);
    for (const n of after.nodes.filter((x) => x.parent_id === `subnet:${subnets[0]!.id}` && x.id !== 'ip_address:ip10')) {
      const o = placed[n.id]!;
      expect(added.y >= o.y + o.height || o.y >= added.y + added.height, `${n.id} overlaps`).to.equal(true);
    }
    // Containers that grew pushed down what lay below them: no two top-level boxes overlap.
    const tops = after.nodes.filter((x) => !x.parent_id).map((x) => placed[x.id]!);
    for (const [i, a] of tops.entries()) for (const b of tops.slice(i + 1)) {
      expect(a.x >= b.x + b.width || b.x >= a.x + a.width || a.y >= b.y + b.height || b.y >= a.y + a.height).to.equal(true);
    }
    // Mostly new (a first layout, a container opened): laid out afresh instead.
    expect(placeIncrementally(after.nodes, after.edges, {})).to.equal(undefined);
  });

  it('leaves every node when within max_nodes, and reports what could not be collapsed', () => {
    const s: Snapshot = { ...empty, hosts: Array.from({ length: 5 }, (_, i) => ({ id: `h${i}`, name: `h${i}`, tags: [] })) };
    const g = buildGraph(s, 'l3', { maxNodes: 3 });
    expect(g.nodes).to.have.length(5);
    expect(g.filtered_out.over_budget).to.equal(2);
  });
});
