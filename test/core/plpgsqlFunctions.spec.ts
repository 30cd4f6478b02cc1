// Today's body of each PL/pgSQL function is one file (sql/functions/<name>.sql): the files
// are exactly the functions a migrated database has, as PostgreSQL prints them. A migration that
// creates or replaces a function without the file following fails here.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Db } from '../../src/core/db.js';
import { FUNCTIONS_DIR, functionDefinitions } from '../../src/core/plpgsqlFunctions.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { isPartitioned } from '../support/tenantSchema.js';

describe('PL/pgSQL functions: one file each, as the migrations leave them', () => {
  let app: TestApp;
  before(async () => { app = await startTestApp(); });
  after(() => app.close());

  it('sql/functions/ holds every function of a migrated database, each file its definition', async function () {
    const db = new Db(app.services.orm.em.fork());
    // The partitioned schema's installers make the same functions; its triggers differ, not them.
    if (await isPartitioned(db)) this.skip();
    const live = await functionDefinitions(db);
    const dir = fileURLToPath(FUNCTIONS_DIR);
    const files = new Map(readdirSync(dir).filter((f) => f.endsWith('.sql')).map((f) => [f.slice(0, -4), readFileSync(`${dir}${f}`, 'utf8')]));
    const hint = 'run `node --import tsx scripts/functionFiles.ts` after a migration that creates or replaces a function';
    expect([...files.keys()].sort(), hint).to.deep.equal([...live.keys()].sort());
    for (const [name, definition] of live) expect(files.get(name), `${name}: ${hint}`).to.equal(definition);
  });
});
