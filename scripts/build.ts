// `npm run build`: the service's entry points bundled by esbuild into dist/ (ESM, dependencies left
// in node_modules, source maps). `npm start` runs these bundles, and the tests spawn the same ones:
// a process loads one file instead of ~150 modules through tsx's loader (measured: ~1.2 s of CPU
// at start instead of ~3.5 s). Also the web application (web/ → dist/web/): one script and one
// stylesheet named by their content hash, and index.html naming them. And the discovery agent's
// downloadable builds (dist/downloads/: one CommonJS file and single executables, see below).
import { build, type Plugin } from 'esbuild';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { AGENT_VERSION } from '../agent/config.js';
import { compactOui } from '../agent/ouiTable.js';
import { ensureRecogCompiled } from './recogCompile.js';
import { AGENT_ARTIFACTS, DOWNLOADS_DIR, type DownloadsManifest } from '../src/modules/downloads/artifacts.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
// topologyThread: the entry of the topology CPU pool's threads (src/modules/topology/pool.ts finds it next to the bundle that loads it).
export const ENTRY_POINTS = { server: 'src/server.ts', worker: 'workers/index.ts', operator: 'scripts/operator.ts', topologyThread: 'src/modules/topology/thread.ts' } as const;
export const bundlePath = (name: keyof typeof ENTRY_POINTS) => `${ROOT}dist/${name}.mjs`;

export async function buildBundles(): Promise<void> {
  await build({
    absWorkingDir: ROOT,
    entryPoints: ENTRY_POINTS,
    outdir: 'dist',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    packages: 'external',
    sourcemap: true,
    logLevel: 'warning',
  });
}

// ---- the agent's downloadable builds (src/modules/downloads/artifacts.ts) -----------------------

const CACHE = `${ROOT}node_modules/.cache/netinventory-agent/`;
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/**
 * No code cache and no snapshot: the blob is then the same for every architecture (one blob for
 * both executables) and V8 compiles the code at start instead (measured: `--help` exits in 88 ms,
 * against 91 ms for `node netinventory-agent.cjs --help`).
 */
const SEA_OPTIONS = { disableExperimentalSEAWarning: true, useCodeCache: false, useSnapshot: false };

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** Writes a file whole or not at all: a server serving the downloads, or a second build, never sees half of one. */
function writeAtomically(file: string, bytes: Buffer | string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file);
}

/** The project's own Node (the `node` devDependency): the x64 executables' base, and the one that writes the SEA blob. */
function projectNode(): { path: string; version: string } {
  const binary = fs.realpathSync(`${ROOT}node_modules/.bin/node`);
  return { path: binary, version: execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '') };
}

/**
 * A Node binary from the npm registry's node-linux-<arch> packages (the arm64 executable's base; the
 * tests' Node 18), fetched once with `npm pack` into node_modules/.cache and checked against the
 * registry's integrity before it is unpacked.
 */
export function nodeFromRegistry(name: `node-linux-${'x64' | 'arm64'}`, version: string): string {
  const dir = `${CACHE}${name}-${version}/`;
  const binary = `${dir}bin/node`;
  if (fs.existsSync(binary)) return binary;
  const integrity = execFileSync('npm', ['view', `${name}@${version}`, 'dist.integrity'], { encoding: 'utf8' }).trim();
  const work = fs.mkdtempSync(`${CACHE}fetch-`);
  try {
    const [{ filename }] = JSON.parse(execFileSync('npm', ['pack', `${name}@${version}`, '--json', '--pack-destination', work], { encoding: 'utf8' })) as Array<{ filename: string }>;
    const [algorithm, expected] = [integrity.slice(0, integrity.indexOf('-')), integrity.slice(integrity.indexOf('-') + 1)];
    const actual = createHash(algorithm).update(fs.readFileSync(`${work}/${filename}`)).digest('base64');
    if (actual !== expected) throw new Error(`${name}@${version}: the tarball's ${algorithm} is ${actual}, the registry says ${expected}`);
    execFileSync('tar', ['-xzf', `${work}/${filename}`, '-C', work, 'package/bin/node']);
    fs.mkdirSync(`${dir}bin`, { recursive: true });
    fs.renameSync(`${work}/package/bin/node`, binary);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return binary;
}

/**
 * The OUI table in its compact form (agent/ouiTable.ts), brotli'd: 389 KB (519 KB as base64 in the
 * bundle), where gzip -9 gives 473 KB; either decompresses in 4 to 8 ms. Brotli at quality 11 takes
 * ~1.4 s, so the result is kept in the cache under the hash of the registry and of the code that
 * defines the form.
 */
function compressedOuiTable(): Buffer {
  const registry = fs.readFileSync(createRequire(import.meta.url).resolve('oui-data'));
  const cached = `${CACHE}oui-${sha256(Buffer.concat([registry, fs.readFileSync(`${ROOT}agent/ouiTable.ts`)])).slice(0, 16)}.br`;
  if (fs.existsSync(cached)) return fs.readFileSync(cached);
  const text = Buffer.from(compactOui(JSON.parse(registry.toString('utf8')) as Record<string, string>));
  const compressed = zlib.brotliCompressSync(text, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_LGWIN]: 24, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: text.length },
  });
  fs.mkdirSync(CACHE, { recursive: true });
  writeAtomically(cached, compressed);
  return compressed;
}

/** agent/ouiSource.ts (which reads node_modules) replaced by a module holding the compressed table. */
function embeddedOuiTable(): Plugin {
  return {
    name: 'embedded-oui-table',
    setup(b) {
      b.onLoad({ filter: /[\\/]agent[\\/]ouiSource\.ts$/ }, () => ({
        loader: 'ts',
        resolveDir: `${ROOT}agent`,
        contents: [
          "import { brotliDecompressSync } from 'node:zlib';",
          "import { readCompactOui, type OuiTable } from './ouiTable.js';",
          '// The compact OUI table, brotli\'d, embedded by scripts/build.ts.',
          `const COMPRESSED = '${compressedOuiTable().toString('base64')}';`,
          'export async function loadOuiTable(): Promise<OuiTable> {',
          "  return readCompactOui(brotliDecompressSync(Buffer.from(COMPRESSED, 'base64')).toString('utf8'));",
          '}',
        ].join('\n'),
      }));
    },
  };
}

/**
 * The discovery agent as ONE CommonJS file, every dependency and the OUI table inside: Node 18 or
 * later runs it from anywhere, and it is the main script of the single executables.
 */
export async function buildAgentBundle(): Promise<Buffer> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['agent/main.ts'],
    outfile: 'dist/downloads/netinventory-agent.cjs',
    write: false,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18', // Debian 12's Node is 18.19
    // CommonJS has no import.meta; the bundle is always the program (agent/main.ts's isMain).
    define: { 'import.meta.main': 'true' },
    // recog.ts reads its table from disk when run from source (import.meta.url); in this bundle that branch is dead (main is true).
    logOverride: { 'empty-import-meta': 'silent' },
    // ssh2's optional native addons are required in try/catch: left out, its JS code runs.
    external: ['*.node'],
    plugins: [embeddedOuiTable()],
    logLevel: 'warning',
  });
  return Buffer.from(result.outputFiles[0]!.contents);
}

/** Injects the SEA blob into a copy of a Node binary (postject's CLI: the package has no types). */
async function injectSea(base: string, blob: string, out: string): Promise<void> {
  fs.copyFileSync(base, out);
  fs.chmodSync(out, 0o755);
  const child = spawn(process.execPath, [`${ROOT}node_modules/postject/dist/cli.js`, out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const code = await new Promise<number | null>((resolve, reject) => child.on('error', reject).on('close', resolve));
  if (code !== 0) throw new Error(`postject ${path.basename(out)}: exit ${code}\n${stderr}`);
}

/**
 * dist/downloads/: each build of src/modules/downloads/artifacts.ts (the .cjs bundle, and Node single
 * executable applications of it for each Linux architecture), manifest.json and SHA256SUMS. That
 * takes ~4.5 s (~9 s the first time: the arm64 base fetched, the OUI table compressed), and ~0.2 s
 * when the bundle, the Node version and postject's are those of the files already there (a hash
 * kept in .inputs beside them): then nothing is written. Returns whether it built.
 */
export async function buildAgentArtifacts(): Promise<{ built: boolean }> {
  ensureRecogCompiled(); // agent/fingerprint/recog/compiled.json, inlined in the bundle: compiled again only when vendor/recog/xml or the compiler changed
  const bundle = await buildAgentBundle();
  const node = projectNode();
  const postject = (JSON.parse(fs.readFileSync(`${ROOT}node_modules/postject/package.json`, 'utf8')) as { version: string }).version;
  const inputs = sha256(JSON.stringify({ bundle: sha256(bundle), node: node.version, postject, sea: SEA_OPTIONS, artifacts: AGENT_ARTIFACTS }));
  const outputs = [...AGENT_ARTIFACTS.map((a) => a.file), 'manifest.json', 'SHA256SUMS'];
  const stamp = `${DOWNLOADS_DIR}.inputs`;
  fs.rmSync(`${ROOT}dist/agent.js`, { force: true }); // the ESM single file of earlier builds, which needed node_modules
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === inputs && outputs.every((f) => fs.existsSync(DOWNLOADS_DIR + f))) return { built: false };

  fs.mkdirSync(DOWNLOADS_DIR, { recursive: true });
  const work = fs.mkdtempSync(`${DOWNLOADS_DIR}.build-`);
  try {
    const main = `${work}/netinventory-agent.cjs`;
    fs.writeFileSync(main, bundle);
    // The blob is written by the Node it will run in (the SEA format is the version's own).
    fs.writeFileSync(`${work}/sea-config.json`, JSON.stringify({ main, output: `${work}/sea.blob`, ...SEA_OPTIONS }));
    execFileSync(node.path, ['--experimental-sea-config', `${work}/sea-config.json`], { stdio: 'pipe' });
    const baseFor = (arch: 'x64' | 'arm64') => (process.platform === 'linux' && process.arch === arch ? node.path : nodeFromRegistry(`node-linux-${arch}`, node.version));
    await Promise.all(AGENT_ARTIFACTS.map(async (a) => {
      if (a.kind === 'javascript') return fs.copyFileSync(main, `${work}/${a.file}`);
      if (a.platform !== 'linux' || !a.arch) throw new Error(`${a.file}: only Linux executables are built`);
      await injectSea(baseFor(a.arch), `${work}/sea.blob`, `${work}/${a.file}`);
    }));
    const files = AGENT_ARTIFACTS.map((a) => {
      const bytes = fs.readFileSync(`${work}/${a.file}`);
      return { file: a.file, kind: a.kind, size: bytes.length, sha256: sha256(bytes) };
    });
    const pkg = JSON.parse(fs.readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string };
    const manifest: DownloadsManifest = { agent_version: AGENT_VERSION, server_version: pkg.version, files };
    fs.writeFileSync(`${work}/manifest.json`, `${JSON.stringify(manifest, null, 2)}\n`);
    fs.writeFileSync(`${work}/SHA256SUMS`, files.map((f) => `${f.sha256}  ${f.file}\n`).join(''));
    // Each file replaces the old one whole (rename); the stamp last, so an interrupted build is redone.
    for (const f of outputs) fs.renameSync(`${work}/${f}`, DOWNLOADS_DIR + f);
    writeAtomically(stamp, inputs);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return { built: true };
}

/** The web application: dist/web/index.html and dist/web/assets/<name>-<hash>.{js,css}. */
export async function buildWeb(): Promise<void> {
  // Earlier assets stay: a page loaded before a rebuild still finds the files it names.
  const out = `${ROOT}dist/web`;
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { app: 'web/src/main.ts' },
    outdir: 'dist/web/assets',
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'chrome120',
    minify: process.env.WEB_MINIFY !== '0', // unminified for profiling only
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((f) => f.replace(/^dist\/web/, ''));
  const script = outputs.find((f) => f.endsWith('.js'))!;
  const style = outputs.find((f) => f.endsWith('.css'));
  const html = fs.readFileSync(`${ROOT}web/index.html`, 'utf8').replace('<!-- assets -->',
    `${style ? `<link rel="stylesheet" href="${style}">` : ''}<script type="module" src="${script}"></script>`);
  fs.writeFileSync(`${out}/index.html`, html);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [, , agent] = await Promise.all([buildBundles(), buildWeb(), buildAgentArtifacts()]);
  console.log(`dist/downloads/: ${agent.built ? 'built' : 'unchanged (same bundle, Node and postject as its .inputs)'}`);
}
