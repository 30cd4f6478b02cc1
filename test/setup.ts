// Mocha root hooks: make sure real PostgreSQL and Redis servers run (starting the project's own
// if needed), then build once a template database with every migration applied. Each test app
// gets its own database cloned from that template (about 50 ms) and its own Redis prefix.
import { ensureServices } from '../scripts/services.js';
import { prepareTemplate } from './support/app.js';

export async function mochaGlobalSetup() {
  const { databaseUrl, redisUrl } = await ensureServices();
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.LOG_LEVEL ??= 'silent';
  await prepareTemplate();
}
