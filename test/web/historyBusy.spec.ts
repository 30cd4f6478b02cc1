// Issue 23.4 in real headless Chromium: History on a network of 1,000 single creates (each its own
// transaction, so its own instant: five times the timeline's 200 ticks) shows a map and a slider
// over grouped ticks, never a refusal or an unchanged page. The creates are SQL (through the API
// they would take minutes); the history triggers record them as any write.
import { expect } from 'chai';
import pg from 'pg';
import { waitFor } from '../workers/support.js';
import { expectNoProblems, openPage, signIn, waitForMap, webWorld, type WatchedPage } from './browser.js';

describe('web History on a network of 1,000 single creates (Chromium)', function () {
  this.timeout(120_000);
  const world = webWorld();
  let w: WatchedPage | undefined;
  afterEach(async () => { await w?.close(); });

  it('shows a map and a slider whose ticks stand for all 1,000 changes', async () => {
    const { app, user } = world;
    const client = new pg.Client({ connectionString: app.databaseUrl });
    await client.connect();
    try {
      const subnet = await client.query<{ id: string }>(
        `insert into subnets (id, organization_id, network_id, cidr, name) values (gen_random_uuid(), $1, $2, '10.0.0.0/16', 'bulk') returning id`,
        [user.orgId, user.networkId],
      );
      // One round trip; each COMMIT ends a transaction, so each create has an instant of its own.
      await client.query(`do $$ begin
        for n in 0..999 loop
          with h as (insert into hosts (id, organization_id, network_id, name) values (gen_random_uuid(), '${user.orgId}', '${user.networkId}', 'h-' || lpad(n::text, 4, '0')) returning id)
          insert into ip_addresses (id, organization_id, network_id, host_id, subnet_id, ip_address)
          select gen_random_uuid(), '${user.orgId}', '${user.networkId}', h.id, '${subnet.rows[0]!.id}', ('10.0.' || (n / 250) || '.' || (n % 250 + 1))::inet from h;
          commit;
        end loop;
      end $$`);
    } finally {
      await client.end();
    }
    w = await openPage(world.browser, app.url);
    await signIn(w.page, app.url, user, `/networks/${user.networkId}/topology`);
    await waitForMap(w.page);
    await w.page.click('#history-button');
    await w.page.waitForSelector('#time-slider, #history-problem');
    expect(await w.page.$('#history-problem'), (await w.page.textContent('#history-problem').catch(() => null)) ?? '').to.equal(null);
    await waitFor('history drawn', async () => /As of/.test((await w!.page.textContent('.status')) ?? ''));
    await waitForMap(w.page);
    const max = Number(await w.page.getAttribute('#time-slider', 'max'));
    expect(max).to.be.within(2, 199);
    // "N changes since …, in K steps": every create counted, grouped into at most 200 steps.
    const summary = (await w.page.textContent('#history-summary')) ?? '';
    const [, changes, steps] = /([\d,]+) changes since .*, in (\d+) steps/.exec(summary) ?? [];
    expect(Number(changes?.replace(/,/g, '')), summary).to.be.at.least(1000);
    expect(Number(steps), summary).to.be.within(2, 200);
    expect(await w.page.$eval('#map-canvas', (el) => el.getAttribute('data-ready'))).to.equal('true');
    expectNoProblems(w);
  });
});
