// The volatile columns each history-bearing table declares (TableSpec.volatileColumns: read from the
// live row while a state is open) are the ones its history triggers were made with (the arguments
// of history_stamp): a column only one side calls volatile would either make states the readers do
// not expect or be read stale from the history's open state.
import { readdirSync } from 'node:fs';
import { expect } from 'chai';
import { HistoryTable } from '../../src/core/historyTable.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { sql } from '../daemons/world.js';

/** Every HistoryTable the modules export (src/modules/<resource>/table.ts or service.ts). */
async function historyTables(): Promise<HistoryTable[]> {
  const root = new URL('../../src/modules/', import.meta.url);
  const found: HistoryTable[] = [];
  for (const module of readdirSync(root)) {
    for (const file of ['table.ts', 'service.ts']) {
      const exported = await import(new URL(`${module}/${file}`, root).href).catch(() => ({}));
      for (const value of Object.values(exported)) if (value instanceof HistoryTable && !found.includes(value)) found.push(value);
    }
  }
  return found;
}

describe('core/volatile columns: the declaration and the history triggers agree', () => {
  let app: TestApp;
  before(async () => { app = await startTestApp(); });
  after(() => app.close());

  it('each table’s TableSpec.volatileColumns are its history_stamp trigger’s arguments', async () => {
    const tables = await historyTables();
    expect(tables.map((t) => t.spec.table)).to.include.members(['hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'daemons', 'networks', 'tags']);
    const rows = await sql<{ table: string; args: string[] }>(app,
      `select c.relname as table, string_to_array(trim(trailing E'\\\\000' from encode(t.tgargs, 'escape')), E'\\\\000') as args
       from pg_trigger t join pg_class c on c.oid = t.tgrelid
       where t.tgname = 'history_stamp' and not t.tgisinternal and c.relkind in ('r', 'p') and c.relnamespace = 'public'::regnamespace`);
    const declaredInDatabase = new Map(rows.map((r) => [r.table, (r.args ?? []).filter(Boolean).sort()]));
    for (const table of tables) {
      expect(declaredInDatabase.get(table.spec.table), `${table.spec.table}: history triggers`).to.deep.equal([...(table.spec.volatileColumns ?? [])].sort());
    }
  });
});
