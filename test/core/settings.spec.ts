// Configuration declared once (src/core/settings.ts): nothing else in the server or its workers
// reads process.env; every declared variable is read by some module; docs/configuration.md is what
// the declaration generates; a bad value stops the start with a message naming each bad variable.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { assertSettings, configurationMarkdown, setting, settingProblems, SETTINGS } from '../../src/core/settings.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DECLARATION = path.join('src', 'core', 'settings.ts');

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    return e.isDirectory() ? sources(rel) : /\.(ts|mts)$/.test(e.name) ? [rel] : [];
  });
}
const SERVER_SOURCES = [...sources('src'), ...sources('workers')];

describe('configuration: every environment variable declared once', () => {
  it('no module of the server or its workers reads process.env but the declaration', () => {
    const readers = SERVER_SOURCES.filter((f) => f !== DECLARATION && /process\s*\.\s*env|process\s*\[\s*['"]env/.test(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(readers).to.deep.equal([]);
  });

  it('every declared variable is read by a module (no declaration of something nothing uses)', () => {
    const code = SERVER_SOURCES.filter((f) => f !== DECLARATION).map((f) => readFileSync(path.join(ROOT, f), 'utf8')).join('\n');
    // NODE_ENV is read by the declaration itself (it turns the test-only knobs off).
    const unread = Object.keys(SETTINGS).filter((name) => name !== 'NODE_ENV' && !code.includes(`'${name}'`));
    expect(unread).to.deep.equal([]);
  });

  it('docs/configuration.md is what the declaration generates (npm run docs:config)', () => {
    expect(readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8')).to.equal(configurationMarkdown());
  });

  it('a bad value stops the start with one message naming every bad variable; good ones pass', () => {
    expect(settingProblems({})).to.deep.equal([]);
    expect(() => assertSettings({ PORT: '3000', SECURE_COOKIES: 'true', LOG_LEVEL: 'debug' })).to.not.throw();
    const bad = { PORT: 'eighty', SECURE_COOKIES: 'yes', WEBHOOK_TIMEOUT_MS: '-1', LOG_LEVEL: 'loud', DAEMON_MIN_VERSION: 'latest', TOPOLOGY_QUEUE_PER_ORG: '1.5', PUBLIC_URL: 'inventory.example.com' };
    expect(() => assertSettings(bad)).to.throw(/^configuration: /);
    const problems = settingProblems(bad);
    expect(problems.map((p) => p.split(' ')[0])).to.deep.equal(['PORT', 'PUBLIC_URL', 'LOG_LEVEL', 'SECURE_COOKIES', 'WEBHOOK_TIMEOUT_MS', 'TOPOLOGY_QUEUE_PER_ORG', 'DAEMON_MIN_VERSION']);
    for (const p of problems) expect(p, p).to.match(/\(got '/);
  });

  it('values as the modules get them: defaults, types, and what the test-only knobs become in production', () => {
    expect(setting('PORT', {})).to.equal(3000);
    expect(setting('SECURE_COOKIES', { SECURE_COOKIES: 'TRUE' })).to.equal(true);
    expect(setting('CREATE_DEFAULT_NETWORK', {})).to.equal(true);
    expect(setting('OPERATOR_EMAILS', { OPERATOR_EMAILS: ' A@x.test, b@x.test ,' })).to.deep.equal(['a@x.test', 'b@x.test']);
    expect(setting('DISCOVERY_SCHEDULE_MINUTE_MS', { DISCOVERY_SCHEDULE_MINUTE_MS: '50' })).to.equal(50);
    expect(setting('DISCOVERY_SCHEDULE_MINUTE_MS', { DISCOVERY_SCHEDULE_MINUTE_MS: '50', NODE_ENV: 'production' })).to.equal(60_000);
    expect(setting('PASSWORD_HASH_COST_N', {})).to.equal(16_384);
    expect(() => setting('PASSWORD_HASH_COST_N', { PASSWORD_HASH_COST_N: '1000' })).to.throw(/^PASSWORD_HASH_COST_N must be a power of two/);
    const config = loadConfig({}, { PUBLIC_URL: 'https://inventory.example.com/', TRUST_PROXY: 'true', HEAVY_READ_BUDGET_MS_PER_SECOND: '100' });
    expect(config).to.include({ publicUrl: 'https://inventory.example.com', trustProxy: true });
    expect(config.heavyReadBudgetPerAddress).to.deep.equal({ refillMsPerSecond: 200, burstMs: 20_000 });
  });
});
