// A timeline draws only the hosts its window's changes touch, and their neighbours, at every tick
// (service.ts hostsToCompare over the window, closed by closeOverSpan), and the other hosts once: on
// a generated network (the realistic one: VMs, containers, dependencies, a hidden hub, workstations
// folded into summaries) changed at random, that union equals the union of every host drawn at
// every tick, item for item (nodes, edges, their intervals, ticks, digest), in every view that
// bounds it; and leaving out a touched host, or its neighbours, is seen. Over the l3 budget
// (max_nodes smaller than the network), each tick's frame of the timeline is the drawn map at that
// tick (graphAt): its collapsed subnets, their counts, and every item it draws.
import { expect } from 'chai';
import { graphAt, timelineParts, type IntervalQuery } from '../../src/modules/topology/service.js';
import { changeBySql, generatedNetwork, random, type SqlChange } from './randomChanges.js';

type Union = Awaited<ReturnType<typeof timelineParts.draw>>;
/** What a timeline answers of its drawing. */
const answer = (u: Union) => ({ ticks: u.ticks, tick_changes: u.tick_changes, nodes: u.nodes, edges: u.edges, digest: u.digest, filtered_out: u.filtered_out });

describe('topology timeline: the hosts drawn at every tick give the whole timeline', function () {
  this.timeout(300_000);
  const w = generatedNetwork('tlagree');
  /** The changes drawn from: hiding twice as likely (a host hidden, then shown again, within one window). */
  const KINDS: SqlChange[] = [
    'rename host', 'hide host', 'hide host', 'untag host', 'delete host', 'rename service', 'delete service', 'delete address', 'add address', 'rename subnet', 'rename dependency', 'add subnet', 'delete subnet'];
  const change = (rnd: () => number) => changeBySql(w, rnd, KINDS);

  it('equals the timeline of every host at every tick after random changes, in l3, workloads and application, hidden hosts shown or not', async () => {
    const rnd = random(412);
    const all = await w.hostCount();
    const start = await w.now();
    const kinds: string[] = [];
    let compared = 0;
    const asked: Array<{ what: string; q: IntervalQuery & { to: string }; hostIds: string[] }> = [];
    for (let round = 0; round < 4; round++) {
      const from = await w.now();
      for (let k = 0; k < 5; k++) kinds.push(await change(rnd));
      const to = await w.now();
      // This round's window, and every round's so far (changes undone within it: a host hidden and shown again).
      for (const [window, since] of [['round', from], ['since the start', start]] as const) {
        for (const view of ['l3', 'workloads', 'application'] as const) {
          for (const includeHidden of [false, true]) {
            const q: IntervalQuery & { to: string } = { network_id: w.networkId, view, from: since, to, include_hidden: includeHidden };
            const hostIds = await timelineParts.drawnAtEveryTick(w.db, w.t.orgId, q);
            const what = `round ${round} (${kinds.join(', ')}), ${window}, ${view}, include_hidden=${includeHidden}`;
            if (view === 'l3' && window === 'round') expect(hostIds, what).to.be.an('array'); // bounded: the test compares something
            if (!hostIds) continue;
            expect(hostIds.length, what).to.be.lessThan(all);
            compared += hostIds.length;
            const bounded = answer(await timelineParts.draw(w.db, w.t.orgId, q, hostIds));
            const whole = answer(await timelineParts.draw(w.db, w.t.orgId, q, null));
            expect(bounded.ticks.length, what).to.be.greaterThan(1);
            expect(bounded, what).to.deep.equal(whole);
            asked.push({ what, q, hostIds });
          }
        }
      }
    }
    expect(compared).to.be.greaterThan(0);
    // Asked again after later changes: the hosts drawn once are then read as of `from` from the history tables, not from the live ones.
    for (const { what, q, hostIds } of asked.filter((_, i) => i % 3 === 0)) {
      expect(answer(await timelineParts.draw(w.db, w.t.orgId, q, hostIds)), `${what}, asked again`).to.deep.equal(answer(await timelineParts.draw(w.db, w.t.orgId, q, null)));
    }
  });

  it('over the l3 budget: each tick\'s frame is the drawn map at that tick, collapsed subnets and counts included', async function () {
    this.timeout(600_000); // a drawn map per tick of 30 timelines: minutes on a busy machine
    const rnd = random(97);
    const org = w.t.orgId;
    const addresses = Number((await w.client.query(`select count(*) from ip_addresses where organization_id = $1 and network_id = $2`, [org, w.networkId])).rows[0].count);
    // Every tag a host carries: the untagged hosts (and those the changes untag) are filtered out.
    const tagged = (await w.client.query<{ t: string }>(`select distinct t from hosts h, unnest(h.tags) t where h.organization_id = $1 and h.network_id = $2 order by t`,
      [org, w.networkId])).rows.map((r) => r.t);
    // A third of the addresses: the biggest subnets collapse, the smaller stay open.
    const maxNodes = Math.floor(addresses / 3);
    const taggedAddresses = Number((await w.client.query(`select count(*) from ip_addresses a join hosts h on h.organization_id = $1 and h.id = a.host_id and h.tags && $3::uuid[]
      where a.organization_id = $1 and a.network_id = $2`, [org, w.networkId, tagged])).rows[0].count);
    const taggedBudget = Math.max(2, Math.floor(taggedAddresses / 3));
    /** Items of the union present at `tick`, without their intervals. */
    const at = <T extends { intervals?: Array<{ from: string; to: string | null }> }>(items: T[], tick: string) =>
      items.filter((x) => x.intervals!.some((i) => i.from <= tick && (i.to === null || i.to > tick)));
    const strip = <T extends { id: string; intervals?: unknown }>({ intervals: _i, ...x }: T) => x as Omit<T, 'intervals'> & { id: string };
    const byId = <T extends { id: string }>(list: T[]) => [...list].sort((a, b) => a.id.localeCompare(b.id));
    const start = await w.now();
    const asked: Array<IntervalQuery & { to: string }> = [];
    let frames = 0;
    const check = async (q: IntervalQuery & { to: string }, what: string) => {
      const hostIds = await timelineParts.drawnAtEveryTick(w.db, org, q);
      if (!hostIds) return;
      const union = await timelineParts.draw(w.db, org, q, hostIds);
      expect(union.ticks.length, what).to.be.greaterThan(1);
      expect(union.nodes.some((n) => n.kind === 'collapsed'), `${what}: something collapsed`).to.equal(true);
      expect(union.nodes.some((n) => n.kind === 'ip_address'), `${what}: something open`).to.equal(true);
      const last = new Map<string, number>(); // item id → the last tick it is drawn at (the union keeps it as drawn then)
      union.ticks.forEach((tick, k) => [...at(union.nodes, tick), ...at(union.edges, tick)].forEach((x) => last.set(x.id, k)));
      for (const [k, tick] of union.ticks.entries()) {
        const map = (await graphAt(w.db, org, { network_id: q.network_id, view: 'l3', tag_ids: q.tag_ids, include_hidden: q.include_hidden, max_nodes: q.max_nodes! }, tick)).graph;
        const nodes = byId(at(union.nodes, tick));
        const edges = byId(at(union.edges, tick));
        const tickWhat = `${what}, tick ${k} of ${union.ticks.length}`;
        expect(nodes.map((n) => n.id), tickWhat).to.deep.equal(byId(map.nodes).map((n) => n.id));
        expect(edges.map((e) => e.id), tickWhat).to.deep.equal(byId(map.edges).map((e) => e.id));
        expect(byId([...nodes, ...edges].filter((x) => last.get(x.id) === k).map(strip)), tickWhat)
          .to.deep.equal(byId([...map.nodes, ...map.edges].filter((x) => last.get(x.id) === k)));
        if (k === union.ticks.length - 1) expect(union.filtered_out, tickWhat).to.deep.equal(map.filtered_out);
        frames += 1;
      }
    };
    for (let round = 0; round < 3; round++) {
      const from = await w.now();
      const kinds: string[] = [];
      for (let k = 0; k < 5; k++) kinds.push(await change(rnd));
      const to = await w.now();
      for (const [window, since] of [['round', from], ['since the start', start]] as const) {
        for (const [filter, tagIds] of [['', undefined], [', by tag', tagged]] as const) {
          for (const includeHidden of [false, true]) {
            const q: IntervalQuery & { to: string } = { network_id: w.networkId, view: 'l3', from: since, to, include_hidden: includeHidden, max_nodes: maxNodes, tag_ids: tagIds };
            // With a tag filter fewer hosts are drawn: a budget that still collapses some of them.
            if (tagIds) q.max_nodes = taggedBudget;
            await check(q, `round ${round} (${kinds.join(', ')}), ${window}${filter}, include_hidden=${includeHidden}`);
            asked.push(q);
          }
        }
      }
    }
    // Asked again after later changes: the hosts drawn once are counted and read as of `from` (scanned), not from the kept counts.
    for (const [i, q] of asked.entries()) if (i % 4 === 0) await check(q, `asked again: ${i}`);
    expect(frames).to.be.greaterThan(20);
  });

  it('differs from the whole timeline when a touched host, or a quiet neighbour of one, is drawn once only', async () => {
    const org = w.t.orgId;
    // A quiet host (one address, no service) in a subnet that folds its quiet hosts into a summary:
    // one with another quiet host (the hosts' ids are random, so "the first quiet host" may be alone).
    const host = (await w.client.query<{ id: string }>(
      `with quiet as (
         select a.host_id, a.subnet_id from ip_addresses a join hosts h on h.organization_id = $1 and h.id = a.host_id and not h.hidden
         where a.organization_id = $1 and a.network_id = $2 and a.subnet_id is not null
           and (select count(*) from ip_addresses b where b.organization_id = $1 and b.host_id = a.host_id) = 1
           and not exists (select 1 from services s where s.organization_id = $1 and s.host_id = a.host_id))
       select q.host_id as id from quiet q
       where (select count(*) from ip_addresses c where c.organization_id = $1 and c.subnet_id = q.subnet_id) >= 10
         and exists (select 1 from quiet o where o.subnet_id = q.subnet_id and o.host_id <> q.host_id)
       order by q.host_id limit 1`, [org, w.networkId])).rows[0]!.id;
    const from = await w.now();
    await w.client.query(`update hosts set name = name || ' renamed' where organization_id = $1 and id = $2`, [org, host]);
    const to = await w.now();
    const q: IntervalQuery & { to: string } = { network_id: w.networkId, view: 'l3', from, to, include_hidden: false };
    const hostIds = (await timelineParts.drawnAtEveryTick(w.db, org, q))!;
    expect(hostIds).to.include(host);
    expect(hostIds.length).to.be.greaterThan(1); // its subnet's other quiet hosts
    const whole = answer(await timelineParts.draw(w.db, org, q, null));
    expect(answer(await timelineParts.draw(w.db, org, q, hostIds))).to.deep.equal(whole);
    expect(answer(await timelineParts.draw(w.db, org, q, hostIds.filter((h) => h !== host)))).not.to.deep.equal(whole);
    expect(answer(await timelineParts.draw(w.db, org, q, [host]))).not.to.deep.equal(whole);
  });
});
