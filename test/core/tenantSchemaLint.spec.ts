// Issue 27.4: the schema stays ready to be distributed by organization_id (Citus; the partitioned
// variant on one PostgreSQL). Rules (test/support/tenantSchema.ts, docs/scale-out.md "Citus"):
// - every table is a tenant table (has organization_id), or says it is 'reference:' / 'local:';
// - a tenant table's primary key, unique and exclusion constraints and unique indexes include
//   organization_id; a foreign key to a tenant table pairs organization_id with organization_id;
//   a reference table points at no tenant table (two known ones, listed with the reason);
// - no trigger function reads TG_TABLE_NAME (its table is told by its arguments);
// - every tenant table (and each partition) has row security with the policy tenant_rows;
// - no statement-level trigger on a tenant table of the partitioned schema; on the plain schema only
//   the capture triggers that their installers make row-level on a partitioned table.
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { isPartitioned, tenantSchemaViolations } from '../support/tenantSchema.js';

describe('core/tenant schema lint', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  it('the migrated schema keeps every tenant-key and capture rule', async () => {
    const db = new Db(app.services.orm.em.fork());
    expect(await tenantSchemaViolations(db)).to.deep.equal([]);
  });

  it('names each kind of breach (a bad table and a bad trigger, rolled back)', async () => {
    const db = new Db(app.services.orm.em.fork());
    const partitioned = await isPartitioned(db);
    let found: string[] = [];
    await db.transaction(async (tx) => {
      await tx.query(`create table lint_unclassified (id uuid primary key)`);
      await tx.query(`create table lint_bad (id uuid primary key, organization_id uuid not null, host_id uuid, code text unique)`);
      await tx.query(`alter table lint_bad add constraint lint_bad_host_fkey foreign key (host_id, organization_id) references hosts (id, organization_id)`);
      await tx.query(`alter table lint_bad add constraint lint_bad_host_only_fkey foreign key (organization_id, host_id) references hosts (id, organization_id)`);
      await tx.query(`create function lint_derives() returns trigger language plpgsql as $$ begin execute format('insert into %I select $1.*', TG_TABLE_NAME || '_history') using NEW; return null; end $$`);
      await tx.query(`create trigger lint_statement after insert on lint_bad for each statement execute function lint_derives()`);
      found = await tenantSchemaViolations(tx);
      throw new Error('rollback');
    }).catch((err: Error) => {
      if (err.message !== 'rollback') throw err;
    });
    expect(found).to.include.members([
      `lint_unclassified: no organization_id and no 'reference:' / 'local:' comment`,
      'lint_bad.lint_bad_pkey: primary key without organization_id',
      'lint_bad.lint_bad_code_key: unique constraint without organization_id',
      'lint_bad.lint_bad_host_only_fkey: foreign key to tenant table hosts without organization_id on both sides',
      'function lint_derives: reads TG_TABLE_NAME',
      'lint_bad.lint_statement: statement-level trigger on a tenant table',
      'lint_bad: tenant table without row security (row_security_enable)',
    ]);
    // host_id paired with hosts.id and organization_id with organization_id: well formed.
    expect(found.join('\n')).not.to.include('lint_bad_host_fkey');
    if (partitioned) expect(found.filter((f) => f.includes('statement-level'))).to.deep.equal(['lint_bad.lint_statement: statement-level trigger on a tenant table']);
  });
});
