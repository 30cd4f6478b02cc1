// A diff draws only the hosts its window's changes touch and their neighbours (service.ts
// hostsToCompare): on a generated network (the realistic one: VMs, containers, dependencies, a
// hidden hub, workstations folded into summaries) changed at random, that diff equals the diff of
// every host, item for item, in every view that bounds it; and leaving out a touched host is seen.
import { expect } from 'chai';
import { diffParts, type IntervalQuery } from '../../src/modules/topology/service.js';
import { byId, changeBySql, generatedNetwork, random, type SqlChange } from './randomChanges.js';

const parse = (j: { json: string | Uint8Array }) => JSON.parse(typeof j.json === 'string' ? j.json : Buffer.from(j.json).toString('utf8'));
/** A diff's items, each list in id order (the drawings' orders differ with the rows read). */
const items = (d: { nodes: any; edges: any }) => Object.fromEntries((['nodes', 'edges'] as const).flatMap((part) =>
  (['added', 'removed', 'changed'] as const).map((k) => [`${part}.${k}`, byId(parse(d[part])[k])])));

describe('topology diff: the hosts compared give the whole diff', function () {
  this.timeout(240_000);
  const w = generatedNetwork('agree');
  /** The changes drawn from (a kind listed twice is twice as likely). */
  const KINDS: SqlChange[] = ['rename host', 'hide host', 'untag host', 'delete host', 'rename service', 'delete service', 'delete address', 'rename subnet', 'add subnet', 'delete subnet'];
  const change = (rnd: () => number) => changeBySql(w, rnd, KINDS);

  it('equals the diff of every host after random changes, in l3, workloads and application, hidden hosts shown or not', async () => {
    const rnd = random(41);
    const all = await w.hostCount();
    let compared = 0;
    for (let round = 0; round < 4; round++) {
      const from = await w.now();
      const kinds: string[] = [];
      for (let k = 0; k < 5; k++) kinds.push(await change(rnd));
      const to = await w.now();
      for (const view of ['l3', 'workloads', 'application'] as const) {
        for (const includeHidden of [false, true]) {
          const q: IntervalQuery = { network_id: w.networkId, view, from, include_hidden: includeHidden };
          const hostIds = await diffParts.hostsToCompare(w.db, w.t.orgId, q, to);
          const what = `round ${round} (${kinds.join(', ')}), ${view}, include_hidden=${includeHidden}`;
          if (view === 'l3') expect(hostIds, what).to.be.an('array'); // bounded: the test compares something
          if (!hostIds) continue;
          expect(hostIds.length, what).to.be.lessThan(all);
          compared += hostIds.length;
          const bounded = items(await diffParts.draw(w.db, w.t.orgId, q, to, hostIds));
          const whole = items(await diffParts.draw(w.db, w.t.orgId, q, to, undefined));
          expect(bounded, what).to.deep.equal(whole);
        }
      }
    }
    expect(compared).to.be.greaterThan(0);
  });

  it('differs from the whole diff when a touched host is left out', async () => {
    const org = w.t.orgId;
    const host = (await w.client.query<{ id: string }>(
      `select h.id from hosts h where h.organization_id = $1 and h.network_id = $2 and not h.hidden
         and (select count(*) from ip_addresses a where a.organization_id = $1 and a.host_id = h.id) > 1 order by h.id limit 1`, [org, w.networkId])).rows[0]!.id;
    const from = await w.now();
    await w.client.query(`update hosts set name = name || ' renamed' where organization_id = $1 and id = $2`, [org, host]);
    const to = await w.now();
    const q: IntervalQuery = { network_id: w.networkId, view: 'l3', from, include_hidden: false };
    const hostIds = (await diffParts.hostsToCompare(w.db, org, q, to))!;
    expect(hostIds).to.include(host);
    const whole = items(await diffParts.draw(w.db, org, q, to, undefined));
    expect(items(await diffParts.draw(w.db, org, q, to, hostIds))).to.deep.equal(whole);
    expect(items(await diffParts.draw(w.db, org, q, to, hostIds.filter((h) => h !== host)))).not.to.deep.equal(whole);
  });
});
