// The agent's downloads (src/modules/downloads): listed with this server's address for agents,
// served byte for byte as the build wrote them, each with a SHA-256 that `sha256sum -c` accepts.
// The builds themselves come from test/setup.ts (scripts/build.ts buildAgentArtifacts).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { AGENT_ARTIFACTS, DOWNLOADS_DIR } from '../../src/modules/downloads/artifacts.js';
import { readManifest } from '../../src/modules/downloads/routes.js';
import { AGENT_VERSION } from '../../agent/config.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk } from '../support/client.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A GET on a connection of its own (no keep-alive), its whole body read. */
function download(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

describe('agent downloads', () => {
  let app: TestApp;
  before(async () => { app = await startTestApp(); });
  after(async () => app?.close());

  it('lists every build of the agent at this version, with sizes, sums and absolute URLs on the address the request came to', async () => {
    const list = expectOk(await call(app.url, 'GET', '/api/v1/downloads'));
    expect(list.agent_version).to.equal(AGENT_VERSION);
    expect(list).to.include({ server_url: app.url, server_url_source: 'request', server_url_is_loopback: true });
    expect(list.files.map((f: { file: string }) => f.file)).to.deep.equal(AGENT_ARTIFACTS.map((a) => a.file));
    for (const f of list.files) {
      const bytes = fs.readFileSync(path.join(DOWNLOADS_DIR, f.file));
      expect(f, f.file).to.include({ size: bytes.length, sha256: sha256(bytes), url: `${app.url}/downloads/${f.file}` });
    }
  });

  it('serves each file as built, with its length, and a .sha256 that sha256sum -c accepts for the downloaded file', async function () {
    this.timeout(120_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-download-'));
    try {
      for (const { file } of AGENT_ARTIFACTS) {
        // Each download on a connection of its own: comparing 128 MB on a busy machine can outlast a
        // kept-alive connection, which the next request would then find closed.
        const res = await download(`${app.url}/downloads/${file}`);
        expect(res.status, file).to.equal(200);
        expect(res.headers['content-type']).to.equal('application/octet-stream');
        expect(res.headers['content-disposition']).to.include(`filename="${file}"`);
        const bytes = res.body;
        const sum = await download(`${app.url}/downloads/${file}.sha256`);
        expect(sum.status).to.equal(200);
        const text = sum.body.toString('utf8');
        expect(Number(res.headers['content-length'])).to.equal(bytes.length);
        expect(bytes.equals(fs.readFileSync(path.join(DOWNLOADS_DIR, file))), `${file}: the bytes served are the build's`).to.equal(true);
        fs.writeFileSync(path.join(dir, file), bytes);
        expect(text).to.equal(`${sha256(bytes)}  ${file}\n`);
        const check = spawnSync('sha256sum', ['-c', '-'], { cwd: dir, input: text, encoding: 'utf8' });
        expect(check.status, check.stdout + check.stderr).to.equal(0);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a file it does not have with a 404 in the envelope, never a path outside the downloads', async () => {
    for (const name of ['nope', 'manifest.json', '..%2Fpackage.json', 'SHA256SUMS.sha256', '%2Fetc%2Fpasswd']) {
      expectError(await call(app.url, 'GET', `/downloads/${name}`), 404, 'download_not_found');
    }
  });

  it('puts PUBLIC_URL into the install commands when set, and says when the address is this machine only', async () => {
    const publicApp = await startTestApp({ publicUrl: 'https://inventory.example.com' });
    try {
      const list = expectOk(await call(publicApp.url, 'GET', '/api/v1/downloads'));
      expect(list).to.include({ server_url: 'https://inventory.example.com', server_url_source: 'PUBLIC_URL', server_url_is_loopback: false });
      expect(list.files[0].url).to.equal(`https://inventory.example.com/downloads/${AGENT_ARTIFACTS[0]!.file}`);
    } finally {
      await publicApp.close();
    }
    // The browser's address, as its Host header says (fetch always sends the URL's own).
    const other = await new Promise<any>((resolve, reject) => {
      const { port } = new URL(app.url);
      http.get({ host: '127.0.0.1', port, path: '/api/v1/downloads', headers: { Host: 'inventory.lan:3000' } }, (res) => {
        let text = '';
        res.on('data', (d) => { text += d; }).on('end', () => resolve(JSON.parse(text)));
      }).once('error', reject);
    });
    expect(other.data).to.include({ server_url: 'http://inventory.lan:3000', server_url_is_loopback: false });
  });

  it('hands out only builds of its own version: another version is 503 downloads_not_built', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-manifest-'));
    try {
      expect(readManifest('9.9.9', dir)).to.match(/no dist\/downloads\/manifest.json/);
      fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ agent_version: 'x', server_version: '0.0.1', files: [] }));
      expect(readManifest('9.9.9', dir)).to.equal('built for version 0.0.1, the server is 9.9.9');
      expect(readManifest('0.0.1', dir)).to.deep.include({ server_version: '0.0.1' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
