// The TypeScript client (issue 14.3): its committed document and types are what the routes give
// today (so a stale copy fails here), it compiles under tsc --strict, and its README example runs
// against a real server. The inventory suites call the API through it too (test/ipAddresses/inventory.ts).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { example } from '../../clients/typescript/example.js';
import { createNetinventoryClient } from '../../clients/typescript/index.js';
import { OPENAPI_FILE, openApiText } from '../../scripts/openapi.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { createKey, registerTenant } from '../support/world.js';
import { NODE, ROOT } from '../workers/support.js';

const run = promisify(execFile);

describe('clients/typescript', function () {
  this.timeout(60_000);

  it('is generated from the current routes: openapi.json and schema.d.ts are up to date', async () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8') === openApiText(), 'clients/typescript/openapi.json is stale: run `npm run client`').to.equal(true);
    await run(NODE, ['clients/typescript/generate.mjs', '--check'], { cwd: ROOT });
  });

  it('compiles under tsc --strict, its example included', async () => {
    await run(NODE, ['node_modules/typescript/bin/tsc', '-p', 'clients/typescript'], { cwd: ROOT });
  });

  describe('against a server', () => {
    let app: TestApp;
    before(async () => {
      app = await startTestApp();
    });
    after(() => app.close());

    it('runs the README example', async () => {
      const t = await registerTenant(app.url);
      const key = await createKey(app.url, t.owner, { name: 'client', permissions: 'Member' });
      await example(app.url, key.key);
      const api = createNetinventoryClient(app.url, { apiKey: key.key });
      const hosts = await api.GET('/api/v1/hosts', { params: { query: { q: 'web-01' } } });
      expect(hosts.data!.data.map((h) => [h.name, h.description])).to.deep.equal([['web-01', 'front']]);
      // An error answers the envelope, typed.
      const missing = await api.GET('/api/v1/hosts/{id}', { params: { path: { id: '3f1c2a9e-7b1d-4c55-9a7e-0c1d2e3f4a5b' } } });
      expect(missing.response.status).to.equal(404);
      expect(missing.error?.code).to.equal('entity_not_found');
    });
  });
});
