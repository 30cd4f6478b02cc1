// Mocha's settings. `npm test` runs the files on two workers (mocha --parallel); the slowest files
// are started first so that no long file runs alone at the end (the rest follow in path order).
const { globSync } = require('node:fs');

const SLOWEST_FIRST = [
  'test/lab/agent.spec.ts', // the discovery agent in network namespaces (root only): ~2 min
  'test/lab/l2.spec.ts',
  'test/lab/agentBuilds.spec.ts', // the agent's downloadable builds scanning the lab (root only): ~1 min
  'test/workers/workerProcess.spec.ts',
  'test/http/tenancy.spec.ts',
  'test/http/rateLimit.spec.ts',
  'test/system/startup.spec.ts',
  'test/system/badInput.spec.ts',
  'test/discovery/replay.spec.ts',
  'test/discovery/ingest.spec.ts',
  'test/workers/serverPoll.spec.ts',
];
const all = globSync('test/**/*.spec.ts').sort();
// Files named on the command line (`npx mocha test/hosts/hosts.spec.ts`) run alone.
const named = process.argv.slice(2).some((arg) => arg.endsWith('.ts') || arg.includes('*'));

module.exports = {
  'node-option': ['import=tsx', 'expose-gc'], // expose-gc: the CSV export test measures the live heap
  require: ['test/setup.ts'],
  timeout: 30000,
  exit: true,
  spec: named ? [] : [...SLOWEST_FIRST.filter((f) => all.includes(f)), ...all.filter((f) => !SLOWEST_FIRST.includes(f))],
};
