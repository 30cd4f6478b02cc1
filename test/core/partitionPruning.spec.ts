// Issue 27.3: on the partitioned schema (SCHEMA_VARIANT=partitioned), every statement a request makes
// on a tenant table reads one partition: the single-node stand-in for a Citus router (single-shard)
// query. The statements are the ones the API really sends (Db.query is recorded during each
// request); each is run again under EXPLAIN ANALYZE with its own parameters, in a transaction rolled
// back, and the partitions its plan executed are counted per table (a partition pruned at run time,
// e.g. by a correlated organization_id, is never executed). Skipped on the plain schema.
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { call, expectOk } from '../support/client.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { tableClasses } from '../support/tenantSchema.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';

type Plan = { 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: Plan[] };

/** Partitions scanned per partitioned table, from an EXPLAIN (format json) plan. */
function partitionsByTable(plan: Plan, out = new Map<string, Set<string>>()): Map<string, Set<string>> {
  const rel = plan['Relation Name'];
  const m = rel?.match(/^(.*)_p[0-7]$/);
  if (m && (plan['Actual Loops'] ?? 0) > 0) out.set(m[1]!, (out.get(m[1]!) ?? new Set()).add(rel!));
  for (const p of plan.Plans ?? []) partitionsByTable(p, out);
  return out;
}

describe('core/partition pruning (partitioned schema)', () => {
  let app: TestApp;
  let t: Tenant;
  let host: any;
  let tenantTables: RegExp;
  const original = Db.prototype.query;
  let recorded: Array<{ sql: string; params: unknown[] }> = [];

  before(async function () {
    this.timeout(180_000); // two tenants with hosts, on a busy machine
    app = await startTestApp();
    const db = new Db(app.services.orm.em.fork());
    const variant = (await db.one<{ v: string }>(`select schema_variant() as v`))!.v;
    if (variant !== 'partitioned') {
      await app.close();
      this.skip();
    }
    const tenant = [...(await tableClasses(db))].filter(([, c]) => c === 'tenant').map(([name]) => name);
    tenantTables = new RegExp(`\\b(${tenant.join('|')})\\b`);
    t = await registerTenant(app.url);
    // A second organization, so that every table has rows in more than one partition.
    const other = await registerTenant(app.url, 'other');
    const otherSubnet = await createSubnet(app.url, other.owner, other.defaultNetworkId);
    await createHostWithChildren(app.url, other.owner, other.defaultNetworkId, otherSubnet.id);
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    host = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id);
  });
  after(async () => {
    Db.prototype.query = original;
    if (app && t) await app.close();
  });

  /** The statements on tenant tables one request makes, and the tables each reads on more than one partition. */
  async function unpruned(request: () => Promise<unknown>): Promise<string[]> {
    recorded = [];
    Db.prototype.query = async function (this: Db, sql: string, params: unknown[] = []) {
      recorded.push({ sql, params });
      return original.call(this, sql, params);
    } as typeof original;
    try {
      await request();
    } finally {
      Db.prototype.query = original;
    }
    const db = new Db(app.services.orm.em.fork());
    const statements = recorded.filter((r) => tenantTables.test(r.sql) && !/^\s*explain/i.test(r.sql));
    expect(statements.length).to.be.greaterThan(0);
    const out: string[] = [];
    for (const s of statements) {
      let plan: Plan | undefined;
      await db.transaction(async (tx) => {
        const [row] = await original.call(tx, `explain (analyze, timing off, summary off, format json) ${s.sql}`, s.params);
        plan = ((row as Record<string, unknown>)['QUERY PLAN'] as Array<{ Plan: Plan }>)[0]!.Plan;
        throw new Error('rollback');
      }).catch((err: Error) => {
        if (err.message !== 'rollback') throw err;
      });
      for (const [table, parts] of partitionsByTable(plan!)) {
        if (parts.size > 1) out.push(`${table} on ${parts.size} partitions: ${s.sql.replace(/\s+/g, ' ').slice(0, 160)}`);
      }
    }
    return out;
  }

  it('host list: one partition per table', async () => {
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${t.defaultNetworkId}`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('host by id: one partition per table', async () => {
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('host list as of an instant: one partition per table', async () => {
    const at = new Date().toISOString();
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts?at=${encodeURIComponent(at)}`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('PUT with children (sync): one partition per table', async () => {
    const body = {
      id: host.id, name: 'renamed', hidden: false, tags: [], hostname: host.hostname, description: host.description,
      ports: [...host.ports.map((p: any) => ({ id: p.id, number: p.number, protocol: p.protocol })), { number: 443, protocol: 'Tcp' }],
    };
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}`, { auth: t.owner, body })))).to.deep.equal([]);
  });
});
