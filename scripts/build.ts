// `npm run build`: the service's entry points bundled by esbuild into dist/ (ESM, dependencies left
// in node_modules, source maps). `npm start` runs these bundles, and the tests spawn the same ones:
// a process loads one file instead of ~150 modules through tsx's loader (measured: ~1.2 s of CPU
// at start instead of ~3.5 s). Also the web application (web/ → dist/web/): one script and one
// stylesheet named by their content hash, and index.html naming them.
import { build } from 'esbuild';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

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

/**
 * The discovery agent as ONE file, dist/agent.js, dependencies included, to copy to any machine with
 * Node 22 (`node agent.js --server … --key …`). The banner gives bundled CommonJS code a require().
 */
export async function buildAgent(): Promise<void> {
  await build({
    absWorkingDir: ROOT,
    entryPoints: { agent: 'agent/main.ts' },
    outdir: 'dist',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    // CommonJS code bundled in (dockerode's ssh2 reads __dirname when loaded) needs require and __dirname.
    banner: {
      js: "import { createRequire as __agentRequire } from 'node:module'; import { dirname as __agentDirname } from 'node:path'; import { fileURLToPath as __agentPath } from 'node:url'; "
        + 'const require = __agentRequire(import.meta.url); const __filename = __agentPath(import.meta.url); const __dirname = __agentDirname(__filename);',
    },
    // ssh2's optional native addons are required in try/catch: left out, its JS code runs.
    external: ['*.node'],
    logLevel: 'warning',
  });
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await Promise.all([buildBundles(), buildWeb(), buildAgent()]);
