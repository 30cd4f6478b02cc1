// Browser benchmark (`npm run bench`, fourth part; or `node --import tsx bench/web.ts`): time from
// navigation to an interactive map in headless Chromium, with the layout already cached, at 500,
// 1,000 and 2,000 element nodes (issue 12 targets: ≤ 1.5 s at 1,000, ≤ 3 s at 2,000), and the tab's
// JS heap at 2,000. Each visit twice: the API drawing the graph anew (its graph cache off), and
// serving it from that cache (a map opened again). Baseline in the same run, same page, same data:
// the page fetching the same topology answer and parsing it without drawing (what any client pays
// before it draws anything). Targets are checked on p90.
// Environment: WEB_RUNS (7); WEB_RENDERER=webgl; WEB_TRACE=1 (performance marks, resource timings);
// WEB_PROFILE=1 (the first page's CPU profile, self time; with WEB_MINIFY=0 for readable names; with
// WEB_PROFILE_FILE=<path prefix> the whole profile too, for DevTools or a total time per function);
// WEB_TIMELINE=1 (the first page's Chromium trace: time per event kind on the page's main thread);
// WEB_SIZES=2000 (only these sizes); WEB_SCREENSHOT=<dir> (a picture of each size's map, to look at).
// Checked on every visit: each node of the baseline's answer is drawn on the map.
// BENCH_SMALL=1 (bench/small.ts): one size (200 element nodes), one run; results in a temporary directory.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { chromium } from 'playwright-core';
import { buildApp, closeServices, createServices } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrate, quoteIdent } from '../src/core/db.js';
import { createLogger } from '../src/core/logger.js';
import { buildWeb } from '../scripts/build.js';
import { ensureChromium } from '../scripts/services.js';
import { adminQuery, serverUrl } from '../test/support/app.js';
import { runLayoutJob } from '../workers/topologyLayout.js';
import { GraphCache } from '../src/modules/topology/graphCache.js';
import { sequenceEvents } from '../src/modules/events/service.js';
import { Db } from '../src/core/db.js';
import { seed } from './seed.js';
import { AllowAllRateLimiter, mustAgree, resultsFile, sized, sizedText } from './small.js';

const RUNS = sized('WEB_RUNS', 7, 1);
const SIZES = sizedText('WEB_SIZES', '500,1000,2000', '200').split(',').map(Number);
const TARGETS: Record<number, number> = { 1000: 1500, 2000: 3000 };
const round = (x: number, d = 0) => Math.round(x * 10 ** d) / 10 ** d;
const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

/** Time per trace event name on the busiest renderer main thread (nested events counted in each). */
function summariseTrace(trace: { traceEvents: Array<{ name: string; ph: string; dur?: number; pid: number; tid: number; args?: any }> }) {
  const mains = trace.traceEvents.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`);
  const byThread = new Map<string, Map<string, number>>();
  for (const e of trace.traceEvents) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph !== 'X' || !e.dur || !mains.includes(key)) continue;
    const m = byThread.get(key) ?? byThread.set(key, new Map()).get(key)!;
    m.set(e.name, (m.get(e.name) ?? 0) + e.dur);
  }
  const busiest = [...byThread.values()].sort((a, b) => (b.get('RunTask') ?? 0) - (a.get('RunTask') ?? 0))[0];
  console.log([...(busiest ?? [])].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([k, v]) => `${Math.round(v / 1000)} ms ${k}`).join('\n'));
}

async function main() {
  const id = randomBytes(4).toString('hex');
  const database = `netinv_bench_web_${id}`;
  const databaseUrl = serverUrl(database);
  const stamp = new Date().toISOString();
  console.log(`netinventory web bench ${stamp}: ${os.cpus().length} CPUs, node ${process.version}`);
  await buildWeb();
  const services = await createServices(loadConfig({ databaseUrl, redisPrefix: `bench:${id}:` }), createLogger('silent'));
  const browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  let server: ReturnType<ReturnType<typeof buildApp>['listen']> | undefined;
  try {
    await migrate(services.orm);
    const graphCache = services.topologyGraphs;
    services.rateLimiter = new AllowAllRateLimiter(services.redis);
    const app = buildApp(services);
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server!.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const email = `web-${id}@example.test`;
    const password = 'plum harbor lantern';
    const json = async (path: string, body: unknown, cookie?: string) => (await (await fetch(`${base}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...(cookie ? { Cookie: cookie } : {}) }, body: JSON.stringify(body) })).json()).data;
    const reg = await json('/api/auth/register', { email, password, organization_name: 'Web bench' });
    const login = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }) });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;

    // One network per size: hosts with 2 addresses each, in subnets of 250 hosts; the layout cached by the job.
    const networks: Record<number, string> = {};
    for (const size of SIZES) {
      const networkId = size === SIZES[0] ? reg.network_ids[0] : (await json('/api/v1/networks', { name: `n${size}` }, cookie)).id;
      const subnetIds: string[] = [];
      for (let k = 0; k < Math.ceil(size / 2 / 250); k++) subnetIds.push((await json('/api/v1/subnets', { network_id: networkId, cidr: `10.${k}.0.0/16`, name: `subnet-${k}` }, cookie)).id);
      await seed({ databaseUrl, organizationId: reg.organization_id, networkId, subnetId: subnetIds[0]!, subnetIds, hosts: size / 2, minHistory: 0, batchHosts: 1000, parallel: 1, log: () => undefined });
      await sequenceEvents(new Db(services.orm.em.fork())); // as a running worker would have
      const first = await (await fetch(`${base}/api/v1/topology?network_id=${networkId}`, { headers: { Cookie: cookie } })).json();
      await runLayoutJob(services, { organization_id: reg.organization_id, network_id: networkId, view: 'l3', as_of: first.data.as_of, digest: first.data.digest, include_hidden: false, max_nodes: 2000 });
      networks[size] = networkId;
      console.log(`network of ${size} element nodes seeded and laid out`);
    }

    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.addCookies([{ name: cookie.split('=')[0]!, value: cookie.split('=').slice(1).join('='), url: base }]);
    await context.addInitScript(() => localStorage.setItem('netinventory.signed-in', '1'));
    // WEB_RENDERER=webgl: Cytoscape's WebGL renderer instead of its canvas (the comparison behind the choice).
    if (process.env.WEB_RENDERER === 'webgl') await context.addInitScript(() => localStorage.setItem('netinventory.renderer', 'webgl'));
    const results: Record<string, unknown> = {};
    for (const size of SIZES) {
      const url = `${base}/networks/${networks[size]}/topology`;
      const map: number[] = [];
      const data: number[] = [];
      const mapDrawn: number[] = [];
      const dataDrawn: number[] = [];
      let heapMb = 0;
      let nodes = 0;
      // Each run twice: the graph drawn anew by the API (its cache off: a map nobody opened since
      // the network last changed), then served from the API's graph cache (opened again, polled).
      for (let visit = 0; visit < 2 * RUNS; visit++) {
        const run = Math.floor(visit / 2);
        const drawn = visit % 2 === 0;
        services.topologyGraphs = drawn ? new GraphCache(0) : graphCache;
        const page = await context.newPage();
        const profiler = process.env.WEB_PROFILE && run === 0 ? await context.newCDPSession(page) : undefined;
        if (profiler) { await profiler.send('Profiler.enable'); await profiler.send('Profiler.setSamplingInterval', { interval: 200 }); await profiler.send('Profiler.start'); }
        const timeline = process.env.WEB_TIMELINE && visit === 0;
        if (timeline) await browser.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline'] });
        await page.goto(url);
        await page.waitForFunction(() => performance.getEntriesByName('map-interactive').length > 0, undefined, { timeout: 60_000 });
        if (timeline) summariseTrace(JSON.parse((await browser.stopTracing()).toString()));
        if (process.env.WEB_SCREENSHOT && visit === 0) await page.screenshot({ path: `${process.env.WEB_SCREENSHOT}/web-bench-${size}.png` });
        (drawn ? mapDrawn : map).push(await page.evaluate(() => performance.getEntriesByName('map-interactive')[0]!.startTime));
        if (profiler) {
          const { profile } = (await profiler.send('Profiler.stop')) as any;
          if (process.env.WEB_PROFILE_FILE) writeFileSync(`${process.env.WEB_PROFILE_FILE}-${size}-${drawn ? 'drawn' : 'cached'}.cpuprofile`, JSON.stringify(profile));
          const self = new Map<string, number>();
          const dt = new Map<number, number>();
          profile.samples.forEach((s: number, i: number) => dt.set(s, (dt.get(s) ?? 0) + (profile.timeDeltas[i] ?? 0)));
          for (const n of profile.nodes) { const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + (dt.get(n.id) ?? 0)); }
          console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => `${Math.round(v / 1000)}ms ${k}`).join('\n'));
        }
        if (process.env.WEB_TRACE) console.log(await page.evaluate(() => performance.getEntriesByType('mark').map((m) => `${m.name} ${Math.round(m.startTime)}`).join(', ')));
        if (process.env.WEB_TRACE) console.log(await page.evaluate(() => JSON.stringify(performance.getEntriesByType('resource').map((e: any) => [e.name.replace(location.origin, '').slice(0, 60), Math.round(e.startTime), Math.round(e.responseEnd)]))));
        const drawnIds = await page.evaluate(() => Object.keys((window as any).netinventoryMap.snapshot()));
        nodes = drawnIds.length;
        if (run === RUNS - 1 && !drawn) {
          const cdp = await context.newCDPSession(page);
          await cdp.send('HeapProfiler.collectGarbage');
          heapMb = round(((await cdp.send('Runtime.getHeapUsage')) as { usedSize: number }).usedSize / 2 ** 20, 1);
        }
        // Baseline: the same answer fetched and parsed by the same page, nothing drawn.
        const baseline = await page.evaluate(async (u) => {
          const t = performance.now();
          const res = await fetch(u, { credentials: 'same-origin' });
          const answer = JSON.parse(await res.text());
          const ms = performance.now() - t;
          return { ms, ids: (answer.data.nodes as Array<{ id: string }>).map((n) => n.id) };
        }, `/api/v1/topology?network_id=${networks[size]}&view=l3`);
        (drawn ? dataDrawn : data).push(baseline.ms);
        const onMap = new Set(drawnIds);
        const missing = baseline.ids.filter((id) => !onMap.has(id));
        mustAgree(`the map of ${size} element nodes draws every node of the baseline's answer`, baseline.ids.length > 0 && !missing.length, `${missing.length} of ${baseline.ids.length} not drawn, e.g. ${missing.slice(0, 3).join(', ')}`);
        await page.close();
      }
      const timing = (ms: number[]) => ({ first: round(ms[0]!), p50: round(pct(ms, 50)), p90: round(pct(ms, 90)), max: round(Math.max(...ms)) });
      const r = {
        elements: size, drawnElements: nodes,
        drawnByApi: { mapMs: timing(mapDrawn), fetchAndParseMs: { p50: round(pct(dataDrawn, 50)), p90: round(pct(dataDrawn, 90)) } },
        cachedByApi: { mapMs: timing(map), fetchAndParseMs: { p50: round(pct(data, 50)), p90: round(pct(data, 90)) } },
        heapMb: size === 2000 ? heapMb : undefined,
      };
      results[size] = r;
      const verdict = (ms: number) => (TARGETS[size] ? `target ≤ ${TARGETS[size]} ms: ${ms <= TARGETS[size]! ? 'met' : 'NOT met'}` : '');
      for (const [label, x] of [['graph drawn by the API', r.drawnByApi], ['graph from the API\'s cache', r.cachedByApi]] as const) {
        console.log(`| ${size} elements, ${label} | map interactive p50 ${x.mapMs.p50} ms (p90 ${x.mapMs.p90}) | fetch+parse only p50 ${x.fetchAndParseMs.p50} ms | ${verdict(x.mapMs.p90)} (p90) |`);
      }
      if (size === 2000) console.log(`| JS heap at 2,000 elements | ${heapMb} MB | | |`);
    }
    await context.close();
    const out = { stamp, machine: { cpus: os.cpus().length, node: process.version, chromium: browser.version() }, runs: RUNS, targets: TARGETS, results };
    const file = resultsFile(`web-${stamp.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${file.pathname}`);
  } finally {
    await browser.close();
    server?.close();
    await closeServices(services);
    await adminQuery(`drop database if exists ${quoteIdent(database)} with (force)`);
  }
}

await main();
process.exit(0);
