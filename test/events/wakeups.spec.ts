// Wake-ups that do not serialise writes (issue 26.2, migration 21): no writing transaction NOTIFYs
// (PostgreSQL takes a database-wide lock at the commit of one that did, so writers committed one at
// a time); the sequencer is woken by the writing process after its commit, or by the hub's poll of
// the outbox for a write no process announced (raw SQL); only the sequencer NOTIFYs, per batch.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { openStream } from '../scale/support.js';
import { waitFor } from '../workers/support.js';

/** A connection of its own LISTENing to the outbox and events channels, counting what arrives. */
async function listen(app: TestApp) {
  const client = new pg.Client({ connectionString: app.databaseUrl });
  await client.connect();
  const received = { netinv_outbox: 0, netinv_events: 0 } as Record<string, number>;
  client.on('notification', (n) => { received[n.channel] = (received[n.channel] ?? 0) + 1; });
  await client.query('listen netinv_outbox; listen netinv_events');
  return { client, received, close: () => client.end() };
}

describe('events: wake-ups without a NOTIFY per write', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let networkId: string;
  const closing: Array<() => unknown> = [];

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'wakeups');
    networkId = await createNetwork(app.url, t.owner, 'Wake-ups');
  });
  afterEach(async () => {
    for (const close of closing.splice(0)) await close();
    await app.close();
  });

  it('no trigger function NOTIFYs, and a write through the API or by raw SQL makes no notification until the sequencer\'s', async () => {
    const notifying = await app.services.orm.em.getConnection().execute(
      `select distinct c.relname as "table", p.proname as "function" from pg_trigger t join pg_proc p on p.oid = t.tgfoid join pg_class c on c.oid = t.tgrelid
       where not t.tgisinternal and p.prosrc ~* '(pg_notify|\\mnotify\\M)'`,
    );
    expect(notifying, 'trigger functions that NOTIFY').to.deep.equal([]);

    const listener = await listen(app);
    closing.push(listener.close);
    // The API process sequences its own write after the commit, though it has no stream open.
    expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { network_id: networkId, name: 'woken' } }), 201);
    await waitFor('the sequencer\'s notification of the host', async () => listener.received.netinv_events! >= 1, 20_000);
    const first = listener.received.netinv_events!;
    // A write no process announces, by another connection: sequenced by the next reader or poll.
    const raw = new pg.Client({ connectionString: app.databaseUrl });
    await raw.connect();
    closing.push(() => raw.end());
    await raw.query(`insert into tags (id, organization_id, name, color, lineage_id) values ($2, $1, 'raw', 'Blue', $2)`, [t.orgId, randomUUID()]);
    expectOk(await call(app.url, 'GET', '/api/v1/events?limit=1', { auth: t.owner }));
    await waitFor('the sequencer\'s notification of the tag', async () => listener.received.netinv_events! > first, 20_000);
    // Notifications arrive in commit order, and every write committed before the sequencer's batch.
    expect(listener.received.netinv_outbox, 'notifications from writing transactions').to.equal(0);
  });

  it('an event written by raw SQL reaches an open stream (the outbox poll), an API write too, in commit order', async () => {
    const stream = await openStream(app.url, t.owner, '?types=tag.created');
    closing.push(stream.close);
    await new Promise((r) => setTimeout(r, 300)); // caught up and live
    const raw = new pg.Client({ connectionString: app.databaseUrl });
    await raw.connect();
    closing.push(() => raw.end());
    await raw.query(`insert into tags (id, organization_id, name, color, lineage_id) values ($2, $1, 'raw-sql', 'Blue', $2)`, [t.orgId, randomUUID()]);
    await waitFor('the raw write in the stream', async () => stream.events.some((e) => e.data.data.name === 'raw-sql'), 20_000);
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'via-api', color: 'Red' } }), 201);
    await waitFor('the API write in the stream', async () => stream.events.some((e) => e.data.data.name === 'via-api'), 20_000);
    expect(stream.events.map((e) => e.data.data.name)).to.deep.equal(['raw-sql', 'via-api']);
  });
});
