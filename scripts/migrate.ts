// `npm run migrate`: applies pending migrations (creating the database on a new server).
import { loadConfig } from '../src/config.js';
import { migrate } from '../src/core/db.js';
import { createOrm } from '../src/database.js';
import { ensureServices } from './services.js';

const { databaseUrl } = await ensureServices();
const orm = await createOrm(process.env.DATABASE_URL ?? databaseUrl ?? loadConfig().databaseUrl, 2);
const applied = await migrate(orm);
console.error(applied.length ? `applied: ${applied.join(', ')}` : 'no pending migration');
await orm.close(true);
