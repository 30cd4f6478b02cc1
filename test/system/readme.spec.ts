// The API walkthrough's worked example (docs/api.md) runs as written: its shell block is executed against a real server and
// every line it prints must equal the README's own `# → …` line that follows the command.
import { expect } from 'chai';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app.js';

const README = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');

/** The fenced block between the readme-example markers, and the outputs the README promises. */
export function readmeExample(text: string): { script: string; expected: string[] } {
  const section = /<!-- readme-example:start -->\s*```sh\n([\s\S]*?)```\s*<!-- readme-example:end -->/.exec(text);
  if (!section) throw new Error('README has no readme-example block');
  const script = section[1]!;
  const expected = script.split('\n').filter((l) => l.startsWith('# → ')).map((l) => l.slice(4));
  return { script, expected };
}

describe('README: the worked example', () => {
  let app: TestApp;
  let dir: string;
  beforeEach(async () => {
    app = await startTestApp();
    dir = mkdtempSync(path.join(tmpdir(), 'netinv-readme-'));
  });
  afterEach(async () => {
    rmSync(dir, { recursive: true, force: true });
    await app.close();
  });

  it('runs as written with curl and jq and prints what the README says', async function () {
    if (spawnSync('sh', ['-c', 'command -v curl && command -v jq']).status !== 0) {
      // The example is for people with curl and jq; a machine without them cannot run it.
      this.skip();
    }
    const { script, expected } = readmeExample(README);
    expect(expected.length).to.be.greaterThan(3);
    // Asynchronously: the server under test runs in this very process. --norc: Node's stdio pipes are
    // socket pairs, which Debian's bash takes for an ssh session (it would read /etc/bash.bashrc).
    const run = await promisify(execFile)('bash', ['--norc', '-euo', 'pipefail', '-c', script], {
      cwd: dir, env: { ...process.env, BASE: app.url }, encoding: 'utf8', timeout: 60_000,
    }).catch((err: { code?: number; stderr?: string; stdout?: string }) => {
      throw new Error(`the example failed (exit ${err.code}): ${err.stderr}\n${err.stdout}`);
    });
    expect(run.stderr, 'stderr').to.equal('');
    expect(run.stdout.trim().split('\n')).to.deep.equal(expected);
  });
});
