// Mocha root hooks: make sure real PostgreSQL and Redis servers run (starting the project's own
// if needed), then build once a template database with every migration applied. Each test app
// gets its own database cloned from that template (ahead of time, see test/support/app.ts) and its
// own Redis prefix.
import { randomBytes } from 'node:crypto';
import { buildAgentArtifacts, buildBundles, buildWeb } from '../scripts/build.js';
import { ensureChromium, ensureServices } from '../scripts/services.js';
import { prepareTemplate, releaseTestDatabases } from './support/app.js';
import { installPruningAudit, setCurrentTest } from './support/pruningAudit.js';
import { describeLeaks, installLeakCapture, setLeakCaptureTest, takeLeaks } from './support/leakCapture.js';

// Throwaway users need no production-strength password hashes (src/core/secrets.ts): 1,024 instead
// of 16,384 rounds of scrypt saves ~35 ms per register, login and user created. Read per hash, so
// setting it here (before any test runs) is in time; child processes inherit it.
process.env.PASSWORD_HASH_COST_N ??= '1024';
// Tests sign their tenants up from 127.0.0.1: no sign-up limit in the API processes they spawn either
// (test apps start without one; test/accounts/signupLimit.spec.ts sets it).
process.env.SIGNUP_LIMIT_PER_HOUR ??= '0';
// Nor a per-address heavy-read budget (HEAVY_READ_BUDGET_PER_ADDRESS_*): every tenant's topology reads
// come from 127.0.0.1 (test/topology/heavyReadAddress.spec.ts sets one on its own app).
process.env.HEAVY_READ_BUDGET_PER_ADDRESS_BURST_MS ??= '0';

export async function mochaGlobalSetup() {
  const { databaseUrl, redisUrl } = await ensureServices();
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.CHROMIUM_PATH = ensureChromium(); // the browser tests (test/web)
  process.env.LOG_LEVEL ??= 'silent';
  // Names this run's test databases in every mocha worker (test/support/app.ts).
  process.env.NETINV_TEST_RUN ??= randomBytes(3).toString('hex');
  // One key for this run's stored credentials (src/core/secretBox.ts), in every worker and spawned
  // process, rather than the developer's data/secrets.key.
  process.env.SECRETS_KEY ??= randomBytes(32).toString('base64');
  // Spawned API, worker and operator processes run the bundles `npm start` runs (scripts/build.ts);
  // the downloads and lab tests use the agent's builds (cached: rebuilt only when the agent changed).
  await Promise.all([prepareTemplate(), buildBundles(), buildWeb(), buildAgentArtifacts()]);
}

export async function mochaGlobalTeardown() {
  await releaseTestDatabases();
}

// PRUNING_AUDIT=<file>: the statements of the whole suite checked for partition pruning (test/support/pruningAudit.ts).
if (process.env.PRUNING_AUDIT) installPruningAudit(process.env.PRUNING_AUDIT);
// Credentials are write-only (issue 37): every answer, webhook body, request sent and log line of the
// run is captured (test/support/leakCapture.ts; LEAK_CAPTURE=0 turns it off) and searched at the end
// of each spec file (of the run without --parallel) for every credential a test stored.
installLeakCapture();
export const mochaHooks = {
  beforeAll(this: Mocha.Context) {
    const files = (this.test?.parent?.suites ?? []).map((s) => s.file?.replace(/^.*\/test\//, 'test/')).filter(Boolean);
    setLeakCaptureTest(`(the hooks before the first test of ${files.length === 1 ? files[0] : `${files.length} files`})`);
  },
  beforeEach(this: Mocha.Context) {
    if (process.env.PRUNING_AUDIT) setCurrentTest(this.currentTest?.fullTitle() ?? '');
    setLeakCaptureTest(this.currentTest?.fullTitle() ?? '');
  },
  afterAll() {
    const leaks = takeLeaks();
    if (leaks.length) throw new Error(describeLeaks(leaks));
  },
};
