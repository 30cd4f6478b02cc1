import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { TAGGED_TABLES } from '../../src/modules/tags/service.js';

const TAG_ORDER_FIELDS = ['name', 'color', 'created_at', 'updated_at', 'is_application'] as const;

describe('tags', () => {
  let app: TestApp;
  let t: Tenant;
  const create = async (body: Record<string, unknown>) =>
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { color: 'Green', ...body } }), 201);
  const list = (query: string) => call(app.url, 'GET', `/api/v1/tags${query}`, { auth: t.owner });

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url);
  });
  afterEach(() => app.close());

  it('creates, reads, replaces and deletes a tag', async () => {
    const tag = await create({ name: 'prod', description: 'production', is_application: true });
    expect(tag).to.include({ name: 'prod', description: 'production', color: 'Green', is_application: true, organization_id: t.orgId });
    expect(tag.lineage_id).to.equal(tag.id);
    expect(tag.valid_to).to.equal(null);
    expect(tag.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const got = expectOk(await call(app.url, 'GET', `/api/v1/tags/${tag.id}`, { auth: t.owner }));
    expect(got).to.deep.equal(tag);
    // PUT replaces: description left out becomes null; server-owned fields sent back are ignored.
    const put = expectOk(await call(app.url, 'PUT', `/api/v1/tags/${tag.id}`, {
      auth: t.owner, body: { ...tag, name: 'production', description: undefined, color: 'Red', is_application: false },
    }));
    expect(put).to.include({ name: 'production', description: null, color: 'Red', is_application: false, created_at: tag.created_at });
    expect(put.updated_at > tag.updated_at).to.equal(true);
    expectOk(await call(app.url, 'DELETE', `/api/v1/tags/${tag.id}`, { auth: t.owner }));
    expectError(await call(app.url, 'GET', `/api/v1/tags/${tag.id}`, { auth: t.owner }), 404, 'entity_not_found');
  });

  it('a deleted tag leaves every table that carries tags (the list is checked against the schema)', async () => {
    const rows = await app.services.orm.em.fork().execute<Array<{ table_name: string }>>(
      `select table_name from information_schema.columns
       where table_schema = current_schema() and column_name = 'tags' and data_type = 'ARRAY' and table_name not like '%\\_history'
         and not exists (select 1 from pg_class c where c.relname = table_name and c.relispartition)`); // tables, not their partitions (partitioned schema)
    expect([...TAGGED_TABLES].sort()).to.deep.equal(rows.map((r) => r.table_name).sort());
  });

  it('refuses a colour outside the spec list and an over-long name', async () => {
    expectError(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'x', color: 'Chartreuse' } }), 400, 'validation_failed');
    expectError(await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'x'.repeat(101), color: 'Blue' } }), 400, 'validation_failed');
  });

  it('names are unique within the organization (409) but not across organizations', async () => {
    const a = await create({ name: 'dup' });
    const res = await call(app.url, 'POST', '/api/v1/tags', { auth: t.owner, body: { name: 'dup', color: 'Blue' } });
    expectError(res, 409, 'entity_already_exists');
    expect(res.body.params).to.deep.equal({ entity: 'Tag', field: 'name', value: 'dup' });
    const b = await create({ name: 'other' });
    expectError(await call(app.url, 'PUT', `/api/v1/tags/${b.id}`, { auth: t.owner, body: { name: 'dup', color: 'Blue' } }), 409, 'entity_already_exists');
    const other = await registerTenant(app.url, 'other');
    expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: other.owner, body: { name: 'dup', color: 'Blue' } }), 201);
    expect(a.name).to.equal('dup');
  });

  it('expected_updated_at: a stale value is 409 entity_modified and changes nothing', async () => {
    const tag = await create({ name: 'lock' });
    const first = expectOk(await call(app.url, 'PUT', `/api/v1/tags/${tag.id}`, { auth: t.owner, body: { name: 'lock2', color: 'Blue', expected_updated_at: tag.updated_at } }));
    const stale = await call(app.url, 'PUT', `/api/v1/tags/${tag.id}`, { auth: t.owner, body: { name: 'lock3', color: 'Red', expected_updated_at: tag.updated_at } });
    expectError(stale, 409, 'entity_modified');
    expect(stale.body.params).to.include({ entity: 'Tag', id: tag.id, expected: tag.updated_at, actual: first.updated_at });
    const now = expectOk(await call(app.url, 'GET', `/api/v1/tags/${tag.id}`, { auth: t.owner }));
    expect(now).to.include({ name: 'lock2', color: 'Blue' });
  });

  it('of 10 concurrent PUTs with the same expected_updated_at exactly one wins', async () => {
    const tag = await create({ name: 'race' });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call(app.url, 'PUT', `/api/v1/tags/${tag.id}`, {
        auth: t.owner, body: { name: `race-${i}`, color: 'Blue', expected_updated_at: tag.updated_at },
      })),
    );
    const winners = results.filter((r) => r.status === 200);
    expect(winners).to.have.length(1);
    expect(results.filter((r) => r.status === 409)).to.have.length(9);
    const stored = expectOk(await call(app.url, 'GET', `/api/v1/tags/${tag.id}`, { auth: t.owner }));
    expect(stored.name).to.equal(winners[0]!.body.data.name);
  });

  describe('pagination', () => {
    beforeEach(async () => {
      for (const name of ['a', 'b', 'c']) await create({ name });
    });

    const cases: Array<[string, number, { count: number; limit: number; offset: number; has_more: boolean }?]> = [
      ['?limit=0', 200, { count: 3, limit: 0, offset: 0, has_more: false }],
      ['?limit=1', 200, { count: 1, limit: 1, offset: 0, has_more: true }],
      ['?limit=1000', 200, { count: 3, limit: 1000, offset: 0, has_more: false }],
      ['', 200, { count: 3, limit: 50, offset: 0, has_more: false }],
      ['?limit=2&offset=1', 200, { count: 2, limit: 2, offset: 1, has_more: false }],
      ['?limit=1&offset=1', 200, { count: 1, limit: 1, offset: 1, has_more: true }],
      ['?offset=10', 200, { count: 0, limit: 50, offset: 10, has_more: false }],
      ['?limit=0&offset=2', 200, { count: 1, limit: 0, offset: 2, has_more: false }],
      ['?limit=1001', 400],
      ['?limit=-1', 400],
      ['?limit=abc', 400],
      ['?offset=-1', 400],
      ['?offset=abc', 400],
    ];
    for (const [query, status, expected] of cases) {
      it(`GET /api/v1/tags${query || ' (defaults)'} → ${status}`, async () => {
        const res = await list(query);
        if (status === 400) return expectError(res, 400, 'validation_failed');
        const data = expectOk(res);
        expect(data).to.have.length(expected!.count);
        expect(res.body.meta.pagination).to.deep.equal({ total_count: 3, limit: expected!.limit, offset: expected!.offset, has_more: expected!.has_more });
      });
    }
  });

  describe('ordering is total for every field, both directions', () => {
    beforeEach(async () => {
      // Two tags written in one statement share created_at and updated_at; colours and
      // is_application repeat too, so every field has ties that only the id can break.
      await app.services.orm.em.fork().execute(
        `insert into tags (id, organization_id, name, color, is_application) values
           (gen_random_uuid(), ?, 'delta', 'Blue', false), (gen_random_uuid(), ?, 'alpha', 'Blue', true)`,
        [t.orgId, t.orgId],
      );
      await create({ name: 'charlie', color: 'Red', is_application: true });
      await create({ name: 'bravo', color: 'Amber' });
      await create({ name: 'echo', color: 'Blue' });
    });

    const cmp = (a: unknown, b: unknown) => (a === b ? 0 : String(a) < String(b) ? -1 : 1);
    for (const field of TAG_ORDER_FIELDS) {
      for (const direction of ['asc', 'desc'] as const) {
        it(`order_by=${field}&order_direction=${direction}`, async () => {
          const data = expectOk(await list(`?order_by=${field}&order_direction=${direction}`));
          const expected = [...data].sort((x, y) => (direction === 'asc' ? 1 : -1) * cmp(x[field], y[field]) || cmp(x.id, y.id));
          expect(data.map((d: { id: string }) => d.id)).to.deep.equal(expected.map((d) => d.id));
          // Paging through one at a time yields the same sequence: the order is total.
          const paged = [];
          for (let offset = 0; offset < data.length; offset++) {
            paged.push(expectOk(await list(`?order_by=${field}&order_direction=${direction}&limit=1&offset=${offset}`))[0].id);
          }
          expect(paged).to.deep.equal(expected.map((d) => d.id));
        });
      }
    }

    it('group_by sorts ascending first, then order_by with its direction', async () => {
      const data = expectOk(await list('?group_by=color&order_by=name&order_direction=desc'));
      const expected = [...data].sort((x, y) => cmp(x.color, y.color) || -cmp(x.name, y.name) || cmp(x.id, y.id));
      expect(data.map((d: { name: string }) => d.name)).to.deep.equal(expected.map((d) => d.name));
      expect(data[0].color).to.equal('Amber');
    });

    it('default order is created_at ascending; unknown fields are 400', async () => {
      const data = expectOk(await list(''));
      const expected = [...data].sort((x, y) => cmp(x.created_at, y.created_at) || cmp(x.id, y.id));
      expect(data.map((d: { id: string }) => d.id)).to.deep.equal(expected.map((d) => d.id));
      expectError(await list('?order_by=organization_id'), 400, 'validation_failed');
      expectError(await list('?order_direction=sideways'), 400, 'validation_failed');
    });
  });

  describe('history and `at`', () => {
    it('reads a tag before its creation, between two updates, and after its deletion', async () => {
      const beforeCreation = new Date(Date.now() - 1000).toISOString();
      const v1 = await create({ name: 'v1' });
      const v2 = expectOk(await call(app.url, 'PUT', `/api/v1/tags/${v1.id}`, { auth: t.owner, body: { name: 'v2', color: 'Blue' } }));
      const v3 = expectOk(await call(app.url, 'PUT', `/api/v1/tags/${v1.id}`, { auth: t.owner, body: { name: 'v3', color: 'Red' } }));
      expectOk(await call(app.url, 'DELETE', `/api/v1/tags/${v1.id}`, { auth: t.owner }));
      const afterDeletion = new Date().toISOString();
      const getAt = (at: string) => call(app.url, 'GET', `/api/v1/tags/${v1.id}?at=${encodeURIComponent(at)}`, { auth: t.owner });

      expectError(await getAt(beforeCreation), 404, 'entity_not_found');
      expect(expectOk(await list(`?at=${encodeURIComponent(beforeCreation)}`))).to.have.length(0);

      // Between the two updates: the state that began with the first update.
      const between = expectOk(await getAt(v2.updated_at));
      expect(between).to.include({ name: 'v2', color: 'Blue', valid_from: v2.updated_at, valid_to: v3.updated_at });
      const listed = expectOk(await list(`?at=${encodeURIComponent(v2.updated_at)}`));
      expect(listed.map((x: { name: string }) => x.name)).to.deep.equal(['v2']);
      // The instant a state ends belongs to the next one.
      expect(expectOk(await getAt(v3.updated_at)).name).to.equal('v3');

      expectError(await getAt(afterDeletion), 404, 'entity_not_found');
      expect(expectOk(await list(`?at=${encodeURIComponent(afterDeletion)}`))).to.have.length(0);
      expectError(await call(app.url, 'GET', `/api/v1/tags/${v1.id}`, { auth: t.owner }), 404, 'entity_not_found');

      const history = expectOk(await call(app.url, 'GET', `/api/v1/tags/${v1.id}/history`, { auth: t.owner }));
      expect(history.map((h: { name: string }) => h.name)).to.deep.equal(['v3', 'v2', 'v1']);
      expect(history[0].valid_to).to.be.a('string');
      expect(history.every((h: { id: string; lineage_id: string }) => h.id === v1.id && h.lineage_id === v1.id)).to.equal(true);
    });

    it('an update that changes nothing adds no state', async () => {
      const tag = await create({ name: 'same' });
      const again = expectOk(await call(app.url, 'PUT', `/api/v1/tags/${tag.id}`, { auth: t.owner, body: { name: 'same', color: 'Green' } }));
      expect(again.updated_at).to.equal(tag.updated_at);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/tags/${tag.id}/history`, { auth: t.owner }))).to.have.length(1);
    });

    it('`at` in the future or malformed is 400', async () => {
      const future = new Date(Date.now() + 3600_000).toISOString();
      expectError(await list(`?at=${encodeURIComponent(future)}`), 400, 'validation_failed');
      expectError(await list('?at=yesterday'), 400, 'validation_failed');
      expectError(await list('?at=2026-01-01T00:00:00'), 400, 'validation_failed'); // no offset
    });

    it('another organization cannot read the history of a tag (404)', async () => {
      const tag = await create({ name: 'mine' });
      const other = await registerTenant(app.url, 'other');
      expectError(await call(app.url, 'GET', `/api/v1/tags/${tag.id}/history`, { auth: other.owner }), 404, 'entity_not_found');
    });
  });
});
