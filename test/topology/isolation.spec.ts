// Issue 22: no topology request or layout job holds an event loop, and nothing one organization
// asks for can lift the bounds or starve another organization: the CPU pool's threads and its fair
// scheduler, the hard node cap that `expand` cannot lift, max_nodes' maximum, the layout queue's
// priorities by organization.
import { expect } from 'chai';
import { Worker } from 'bullmq';
import { Db } from '../../src/core/db.js';
import type { AppError } from '../../src/core/errors.js';
import { chooseCollapsed, emptyFilteredOut, MAX_NODES_CAP } from '../../src/modules/topology/graph.js';
import { enqueueLayout, type LayoutJob } from '../../src/modules/topology/layout.js';
import { cpuPool, CpuPool } from '../../src/modules/topology/pool.js';
import { FairScheduler, PerKeyGate } from '../../src/modules/topology/scheduler.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { waitFor, workerServicesFor } from '../workers/support.js';
import { workerOptions } from '../../workers/context.js';
import { QUEUE_NAMES } from '../../src/core/queues.js';

/** `hosts` hosts with one address each, spread over `subnets` subnets (10.<k>.0.0/16): one SQL insert per table. */
async function seedAddresses(app: TestApp, t: Tenant, hosts: number, subnets: number): Promise<string[]> {
  const db = new Db(app.services.orm.em.fork());
  const ids = await db.query<{ id: string }>(
    `insert into subnets (id, organization_id, network_id, cidr, name)
     select gen_random_uuid(), ?, ?, ('10.' || k || '.0.0/16')::cidr, 'seeded-' || k from generate_series(1, ?::int) k returning id`,
    [t.orgId, t.defaultNetworkId, subnets],
  );
  await db.query(
    `insert into hosts (id, organization_id, network_id, name) select gen_random_uuid(), ?, ?, 'h-' || lpad(n::text, 5, '0') from generate_series(1, ?::int) n`,
    [t.orgId, t.defaultNetworkId, hosts],
  );
  await db.query(
    `insert into ip_addresses (id, organization_id, network_id, host_id, subnet_id, ip_address)
     select gen_random_uuid(), ?, ?, h.id, s.id, ('10.' || s.k || '.' || (h.n / 250) || '.' || (h.n % 250 + 1))::inet
     from (select id, substr(name, 3)::int as n from hosts where network_id = ?) h
     join (select id, substr(name, 8)::int as k from subnets where network_id = ?) s on s.k = h.n % ? + 1`,
    [t.orgId, t.defaultNetworkId, t.defaultNetworkId, t.defaultNetworkId, subnets],
  );
  return ids.map((r) => r.id);
}

describe('topology isolation: large views off the event loop, bounded, fair between organizations', () => {
  let app: TestApp;
  let t: Tenant;
  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'iso');
  });
  afterEach(async function () {
    this.timeout(120_000); // the events of thousands of seeded addresses may still be sequencing on a loaded machine
    await app.close();
  });

  it('/api/health answers while a large export is laid out (its elk layout runs on a thread of the pool)', async function () {
    this.timeout(120_000);
    const subnets = await seedAddresses(app, t, 1500, 3);
    // Quiet hosts (no service, no dependency) fold into one summary node per subnet: opened, so every address is drawn.
    const expand = subnets.map((id) => `summary:${id}`).join(',');
    // Health is asked once the export's heavy task has been handed to the pool.
    const pool = cpuPool();
    const original = pool.run.bind(pool);
    let handedOver!: () => void;
    const started = new Promise<void>((resolve) => { handedOver = resolve; });
    pool.run = ((org, task, input, size) => {
      if (task === 'export') handedOver();
      return original(org, task, input, size);
    }) as typeof pool.run;
    try {
      const order: string[] = [];
      const exported = fetch(`${app.url}/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=svg&expand=${expand}`, { headers: { Cookie: t.owner.cookie! } })
        .then(async (res) => { order.push(`export ${res.status}`); return res.text(); });
      await started;
      for (let i = 0; i < 10; i++) {
        const res = await fetch(`${app.url}/api/health`);
        order.push(`health ${res.status}`);
      }
      const svg = await exported;
      expect(order).to.deep.equal([...Array(10).fill('health 200'), 'export 200']);
      expect(svg).to.contain('h-01500');
    } finally {
      pool.run = original;
    }
  });

  it('expand cannot lift the hard cap: a subnet larger than it stays collapsed, and max_nodes above it is a 400 on every topology read', async function () {
    this.timeout(60_000);
    const [big] = await seedAddresses(app, t, MAX_NODES_CAP + 1000, 1);
    const data = expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}&max_nodes=10&expand=subnet:${big}`, { auth: t.owner }));
    expect(data.nodes.length).to.be.at.most(MAX_NODES_CAP);
    expect(data.nodes.find((n: any) => n.id === `subnet:${big}`)).to.include({ kind: 'collapsed' });
    expect(data.filtered_out).to.include({ collapsed_containers: 1, collapsed_nodes: MAX_NODES_CAP + 1000 });
    // The drawing's rule (timeline unions, other views): the same choice.
    const out = emptyFilteredOut();
    const chosen = chooseCollapsed(new Map([['subnet:big', MAX_NODES_CAP + 1000], ['subnet:small', 5]]), MAX_NODES_CAP + 1005, { maxNodes: 10, expand: ['subnet:big', 'subnet:small'] }, out);
    expect([...chosen]).to.deep.equal(['subnet:big']); // the small one stays open: the view is then within the cap
    expect(out).to.include({ collapsed_containers: 1, over_budget: 0 });

    const q = `network_id=${t.defaultNetworkId}&max_nodes=${MAX_NODES_CAP + 1}`;
    for (const path of [`/api/v1/topology?${q}`, `/api/v1/topology/timeline?${q}&from=2026-01-01T00:00:00Z`, `/api/v1/topology/export?${q}&format=mermaid`]) {
      const res = await call(app.url, 'GET', path, { auth: t.owner });
      expectError(res, 400, 'validation_failed');
      expect(res.body.params.field, path).to.equal('query.max_nodes');
    }
  });

  it('layout jobs: an organization\'s first job is taken before another organization\'s later ones (BullMQ priorities)', async () => {
    const services = workerServicesFor(app);
    const taken: string[] = [];
    let worker: Worker | undefined;
    try {
      const job = (org: string, i: number): LayoutJob => ({
        organization_id: org, network_id: t.defaultNetworkId, view: 'l3', as_of: '2026-11-25T00:00:00Z', digest: `${org}-${i}`, include_hidden: false, max_nodes: 2000,
      });
      for (let i = 1; i <= 4; i++) await enqueueLayout(services.queues.topologyLayout, job('a', i));
      await enqueueLayout(services.queues.topologyLayout, job('b', 1));
      worker = new Worker(services.queues.topologyLayout.name, async (j) => { taken.push(j.data.digest); }, workerOptions(services, QUEUE_NAMES.topologyLayout, 1));
      await waitFor('every job taken', async () => taken.length === 5);
      expect(taken).to.deep.equal(['a-1', 'b-1', 'a-2', 'a-3', 'a-4']);
    } finally {
      await worker?.close();
      await services.close();
    }
  });
});

describe('topology isolation: CPU pool and fair scheduler (pure)', () => {
  it('an organization that keeps heavy reads waiting rests between them; a lone read and other organizations never wait for the rest', async () => {
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const gate = new PerKeyGate({ running: 1, queued: 4, restRatio: 1, later: (fn, ms) => timers.push({ fn, ms }) });
    const started: string[] = [];
    const finish = new Map<string, () => void>();
    const work = (name: string) => () => new Promise<string>((resolve) => { started.push(name); finish.set(name, () => resolve(name)); });
    const tick = () => new Promise((r) => setImmediate(r));
    // Alone: answered and released at once, no rest.
    const lone = gate.run('a', work('lone'));
    await tick();
    finish.get('lone')!();
    expect(await lone).to.deep.equal({ value: 'lone' });
    expect(timers).to.have.length(0);
    // Two of a at once: the first is answered at once, the second waits out a rest as long as the first took.
    const a1 = gate.run('a', work('a1'));
    const a2 = gate.run('a', work('a2'));
    await tick();
    finish.get('a1')!();
    expect(await a1).to.deep.equal({ value: 'a1' });
    expect(timers).to.have.length(1);
    const b1 = gate.run('b', work('b1'));
    await tick();
    expect(started).to.deep.equal(['lone', 'a1', 'b1']); // a2 rests; b does not wait for a's rest
    timers[0]!.fn();
    await tick();
    expect(started).to.deep.equal(['lone', 'a1', 'b1', 'a2']);
    finish.get('a2')!();
    finish.get('b1')!();
    await Promise.all([a2, b1]);
  });

  it("a heavy read waits for its organization's previous one, never for another organization's, and is refused beyond the queue", async () => {
    const gate = new PerKeyGate({ running: 1, queued: 2 });
    const log: string[] = [];
    const release = new Map<string, () => void>();
    const work = (name: string) => () => new Promise<string>((resolve) => { log.push(`start ${name}`); release.set(name, () => { log.push(`end ${name}`); resolve(name); }); });
    const a1 = gate.run('a', work('a1'));
    const a2 = gate.run('a', work('a2'));
    const a3 = gate.run('a', work('a3'));
    expect(await gate.run('a', work('a4')), 'a fourth of a: two already wait').to.equal(undefined);
    const b1 = gate.run('b', work('b1'));
    await new Promise((r) => setImmediate(r));
    expect(log).to.deep.equal(['start a1', 'start b1']); // b did not wait for a
    release.get('a1')!();
    expect(await a1).to.deep.equal({ value: 'a1' });
    await new Promise((r) => setImmediate(r));
    expect(log.slice(2)).to.deep.equal(['end a1', 'start a2']);
    release.get('b1')!();
    release.get('a2')!();
    await Promise.all([a2, b1]);
    await new Promise((r) => setImmediate(r));
    release.get('a3')!();
    expect(await a3).to.deep.equal({ value: 'a3' });
    expect(log.filter((l) => l.startsWith('start'))).to.deep.equal(['start a1', 'start b1', 'start a2', 'start a3']);
    expect(gate.waiting('a')).to.equal(0);
  });

  it('takes organizations in turn, one running task each, and refuses beyond a queue\'s bound', () => {
    const s = new FairScheduler<string>({ slots: 1, perKeyRunning: 1, perKeyQueued: 4 });
    for (const x of ['a1', 'a2', 'a3', 'a4']) expect(s.push('a', x)).to.equal(true);
    expect(s.push('a', 'a5')).to.equal(false);
    expect(s.push('b', 'b1')).to.equal(true);
    expect(s.push('b', 'b2')).to.equal(true);
    const ran: string[] = [];
    for (let next = s.next(); next; next = s.next()) {
      expect(s.next()).to.equal(undefined); // one slot: nothing else starts meanwhile
      ran.push(next.item);
      s.done(next.key);
    }
    expect(ran).to.deep.equal(['a1', 'b1', 'a2', 'b2', 'a3', 'a4']);
    // Two slots, one task per organization at a time: a second of a's waits even with a free slot.
    const two = new FairScheduler<string>({ slots: 2, perKeyRunning: 1, perKeyQueued: 4 });
    two.push('a', 'a1');
    two.push('a', 'a2');
    expect(two.next()?.item).to.equal('a1');
    expect(two.next()).to.equal(undefined);
    two.done('a');
    expect(two.next()?.item).to.equal('a2');
  });

  it('a task over the time limit is stopped (503 topology_timeout); beyond an organization\'s queue bound, 429 topology_busy', async function () {
    this.timeout(60_000);
    const pool = new CpuPool({ threads: 1, perOrgRunning: 1, perOrgQueued: 1, timeoutMs: 20, restRatio: 0 });
    try {
      const nodes = Array.from({ length: 400 }, (_, i) => ({ id: `n${i}`, kind: 'host', entity_id: null, parent_id: null, label: `host-${i}` }));
      const edges = nodes.slice(1).map((n) => ({ id: `e-${n.id}`, kind: 'request_path', source: 'n0', target: n.id }));
      const layout = () => pool.run('a', 'layout', { nodes, edges, previous: {} }, nodes.length);
      const [first, second, third] = await Promise.allSettled([layout(), layout(), layout()]);
      for (const r of [first, second]) expect(r.status === 'rejected' && (r.reason as AppError).code).to.equal('topology_timeout');
      expect(third.status === 'rejected' && (third.reason as AppError).code).to.equal('topology_busy');
    } finally {
      await pool.close();
    }
  });
});
