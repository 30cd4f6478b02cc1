// placeIncrementally after the l3 fold (issue 23), pure: a map laid out with a subnet's quiet hosts
// one by one, then drawn with them folded into one summary node, is laid out afresh (a container
// never shrinks in place: the subnet would stay a large, mostly empty box); losing a host or two
// still keeps every position.
import { expect } from 'chai';
import { buildGraph, FOLD_MIN, type Snapshot } from '../../src/modules/topology/graph.js';
import { layoutGraph, placeIncrementally } from '../../src/modules/topology/layout.js';

const OFFICE = '00000000-0000-4000-8000-000000000001';
const SERVERS = '00000000-0000-4000-8000-000000000002';

/** `quiet` hosts in "office" (one address, no service: folded from FOLD_MIN on), `busy` ones in "servers" (a service each). */
function snapshot(quiet: number, busy: number): Snapshot {
  const subnets = [{ id: OFFICE, cidr: '10.1.0.0/24', name: 'office' }, { id: SERVERS, cidr: '10.2.0.0/24', name: 'servers' }];
  const hosts = [
    ...Array.from({ length: quiet }, (_, i) => ({ id: `ws${i}`, name: `ws-${i}`, tags: [] })),
    ...Array.from({ length: busy }, (_, i) => ({ id: `srv${i}`, name: `srv-${i}`, tags: [] })),
  ];
  const ipAddresses = hosts.map((h, i) => ({ id: `ip-${h.id}`, host_id: h.id, subnet_id: i < quiet ? OFFICE : SERVERS, ip_address: i < quiet ? `10.1.0.${i + 1}` : `10.2.0.${i - quiet + 1}`, position: 0 }));
  const services = hosts.slice(quiet).map((h) => ({ id: `svc-${h.id}`, host_id: h.id, name: `svc-${h.id}`, position: 0 }));
  return { subnets, hosts, ipAddresses, ports: [], services, bindings: [], interfaces: [], dependencies: [], tags: [] };
}

describe('topology: placeIncrementally after a container lost most of its elements (pure)', () => {
  // Few enough quiet hosts that, folded, more than 80 % of the nodes were placed before: only the new rule refuses.
  const quiet = FOLD_MIN + 4;
  const busy = 60;

  it('a subnet whose quiet hosts folded into a summary node is laid out afresh', async () => {
    const opened = buildGraph(snapshot(quiet, busy), 'l3', { maxNodes: 1000, expand: [`summary:${OFFICE}`] });
    const laid = await layoutGraph(opened.nodes, opened.edges);
    const folded = buildGraph(snapshot(quiet, busy), 'l3', { maxNodes: 1000 });
    expect(folded.nodes.map((n) => n.id)).to.include(`summary:${OFFICE}`);
    const keptBefore = folded.nodes.filter((n) => laid[n.id]).length;
    expect(keptBefore, 'placed before').to.be.at.least(0.8 * folded.nodes.length);
    expect(placeIncrementally(folded.nodes, folded.edges, laid)).to.equal(undefined);
  });

  it('a subnet that lost less than half of its hosts keeps every position', async () => {
    const before = buildGraph(snapshot(quiet, busy), 'l3', { maxNodes: 1000, expand: [`summary:${OFFICE}`] });
    const laid = await layoutGraph(before.nodes, before.edges);
    // Two servers gone, the office still open.
    const after = buildGraph(snapshot(quiet, busy - 2), 'l3', { maxNodes: 1000, expand: [`summary:${OFFICE}`] });
    const placed = placeIncrementally(after.nodes, after.edges, laid);
    expect(placed).not.to.equal(undefined);
    for (const n of after.nodes.filter((x) => x.parent_id)) expect(placed![n.id], n.id).to.deep.equal(laid[n.id]);
  });
});
