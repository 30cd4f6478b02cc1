// Queue `topology-layout`: lays a topology graph out (src/modules/topology/layout.ts: around the
// network view's last layout when most of it is still there, else afresh with elkjs) and stores
// the positions by (view, digest) for every later answer. The job carries the query and the
// instant the answer was drawn at; the graph is drawn again from history at that instant, so the
// positions belong to exactly the graph the client was given. Jobs are deduplicated by (view,
// digest): a graph asked for by many clients is laid out once. The drawing and the layout run on
// this process's CPU pool (src/modules/topology/pool.ts), so its event loop keeps delivering
// webhooks and polling daemons meanwhile; jobs are taken by priority, an organization's nth
// outstanding job at n (layout.ts enqueueLayout), so one organization's flood never delays
// another's first map. A job's CPU time is charged to its organization's heavy-read budget.
import { Worker } from 'bullmq';
import { Db } from '../src/core/db.js';
import { QUEUE_NAMES } from '../src/core/queues.js';
import { layoutFinished, previousPositions, storeLayout, type LayoutJob } from '../src/modules/topology/layout.js';
import { graphAt, timelineGraph } from '../src/modules/topology/service.js';
import { cpuPool } from '../src/modules/topology/pool.js';
import { timed, workerOptions, type WorkerServices } from './context.js';

export const TOPOLOGY_LAYOUT_QUEUE = QUEUE_NAMES.topologyLayout;

export async function runLayoutJob(services: Pick<WorkerServices, 'orm' | 'logger'>, job: LayoutJob): Promise<{ nodes: number; duration_ms: number; route_ms: number }> {
  const db = new Db(services.orm.em.fork(), { organizationId: job.organization_id });
  const { graph, digest } = job.timeline
    ? await timelineGraph(db, job.organization_id, { ...job, ...job.timeline }).then((u) => ({ graph: u, digest: u.digest }))
    : await graphAt(db, job.organization_id, job, job.as_of);
  try {
    // Where the map already stands, it stays: new nodes placed near their neighbours; elk only for a new map.
    const previous = await previousPositions(db, job.network_id, job.view, job.digest);
    const { positions, routes, durationMs, routeMs } = await cpuPool().run(job.organization_id, 'layout', { nodes: graph.nodes, edges: graph.edges, previous }, graph.nodes.length);
    // The graph drawn again is the one answered (same inputs, same instant): its digest is the job's.
    for (const d of new Set([job.digest, digest])) await storeLayout(db, { ...job, digest: d }, { positions, routes, durationMs });
    // (route_ms: the part of duration_ms spent routing the edges, for bench/web.ts.)
    return { nodes: graph.nodes.length, duration_ms: Math.round(durationMs), route_ms: Math.round(routeMs) };
  } catch (err) {
    await storeLayout(db, job, { error: (err as Error).message.slice(0, 500) });
    throw err;
  }
}

export async function startTopologyLayout(services: WorkerServices): Promise<Worker> {
  return new Worker(
    TOPOLOGY_LAYOUT_QUEUE,
    timed(services, TOPOLOGY_LAYOUT_QUEUE, async (job) => {
      try {
        // Its CPU time is the organization's, as a heavy read's is (heavyReadBudget.ts): an organization
        // whose views keep needing new layouts spends its budget, and its heavy reads then wait.
        const { value, cpuMs } = await cpuPool().metered(() => runLayoutJob(services, job.data as LayoutJob));
        await services.heavyReadBudget.charge((job.data as LayoutJob).organization_id, cpuMs);
        return value;
      } finally {
        await layoutFinished(services.queues.topologyLayout, (job.data as LayoutJob).organization_id).catch(() => undefined);
      }
    }),
    // One more job than the pool has threads: while a large layout holds them, a small one (laid out inline) still goes ahead.
    workerOptions(services, QUEUE_NAMES.topologyLayout, cpuPool().options.threads + 1),
  );
}
