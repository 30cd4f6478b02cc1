// The budgeted l3 (service.ts budgetedL3: elements per subnet counted in SQL, the collapsed subnets
// chosen from the counts, only the hosts left open or serving a dependency read and drawn) equals
// the whole network drawn and cut to the same budget (graph.ts collapse), node for node: on a
// generated network changed at random, live (kept counts) and as of an instant (scanned), by tag,
// hidden hosts shown or not, with a subnet kept open, over small budgets. Every subnet's summary
// is kept open (expand=summary:…): the budgeted read counts a subnet's quiet hosts one by one where
// the drawing folds them into one summary node, so with folds the two disagree (which subnets
// collapse, and a collapsed subnet's counts); the last case shows it.
import { expect } from 'chai';
import { buildGraph } from '../../src/modules/topology/graph.js';
import { graphAt, loadSnapshot, type TopologyQuery } from '../../src/modules/topology/service.js';
import { byId, changeBySql, generatedNetwork, pick, random } from './randomChanges.js';

describe('topology: the budgeted l3 equals the whole drawing cut to the same budget', function () {
  this.timeout(300_000);
  const w = generatedNetwork('budget');
  const ids = async (sql: string) => (await w.client.query<{ id: string }>(sql, [w.t.orgId, w.networkId])).rows.map((r) => r.id);

  /** The budgeted answer and the whole drawing cut to its budget, compared. */
  async function expectAgree(q: TopologyQuery, at: string | undefined, what: string) {
    const { graph: budgeted } = await graphAt(w.db, w.t.orgId, q, at);
    const whole = buildGraph(await loadSnapshot(w.db, w.t.orgId, w.networkId, at), 'l3', {
      maxNodes: q.max_nodes, expand: q.expand, includeHidden: q.include_hidden, tagIds: q.tag_ids,
    });
    expect(byId(budgeted.nodes), what).to.deep.equal(byId(whole.nodes));
    expect(byId(budgeted.edges), what).to.deep.equal(byId(whole.edges));
    expect(budgeted.filtered_out, what).to.deep.equal(whole.filtered_out);
    return whole;
  }

  it('after random changes: live and as of an instant, by tag or not, hidden hosts shown or not, a container kept open', async () => {
    const rnd = random(42);
    const kinds: string[] = [];
    let collapsedSeen = 0;
    let instants: string[] = [];
    for (let round = 0; round < 4; round++) {
      for (let k = 0; k < 5; k++) kinds.push(await changeBySql(w, rnd, ['rename host', 'hide host', 'untag host', 'delete host', 'delete service', 'delete address', 'add address', 'rename subnet', 'add subnet', 'delete subnet']));
      instants = [...instants, await w.now()];
      const subnets = await ids(`select id from subnets where organization_id = $1 and network_id = $2 order by id`);
      const tags = await ids(`select t.id from tags t where t.organization_id = $1 and exists (select 1 from hosts h where h.organization_id = $1 and h.network_id = $2 and t.id = any(h.tags)) order by t.id`);
      for (const maxNodes of [5, 20, 60]) {
        for (const at of [undefined, pick(rnd, instants)]) {
          for (const includeHidden of [false, true]) {
            const summaries = subnets.map((id) => `summary:${id}`);
            for (const shape of [{}, { expand: [`subnet:${pick(rnd, subnets)}`] }, { tag_ids: [pick(rnd, tags)] }]) {
              const q: TopologyQuery = { network_id: w.networkId, view: 'l3', include_hidden: includeHidden, max_nodes: maxNodes, ...shape, expand: [...summaries, ...shape.expand ?? []] };
              const what = `round ${round} (${kinds.join(', ')}), max_nodes ${maxNodes}, at ${at ?? 'live'}, include_hidden ${includeHidden}, ${JSON.stringify(shape)}`;
              const whole = await expectAgree(q, at, what);
              collapsedSeen += whole.filtered_out.collapsed_containers;
            }
          }
        }
      }
    }
    expect(collapsedSeen).to.be.greaterThan(0); // the budget cut something: the budgeted read was taken
  });
});
