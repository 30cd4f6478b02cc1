// Queue `topology-layout`: lays a topology graph out (src/modules/topology/layout.ts: around the
// network view's last layout when most of it is still there, else afresh with elkjs) and stores
// the positions by (view, digest) for every later answer. The job carries the query and the
// instant the answer was drawn at; the graph is drawn again from history at that instant, so the
// positions belong to exactly the graph the client was given. Jobs are deduplicated by (view,
// digest): a graph asked for by many clients is laid out once.
import { Worker } from 'bullmq';
import { Db } from '../src/core/db.js';
import { QUEUE_NAMES } from '../src/core/queues.js';
import { layoutGraph, placeIncrementally, previousPositions, storeLayout, type LayoutJob } from '../src/modules/topology/layout.js';
import { graphAt, timelineGraph } from '../src/modules/topology/service.js';
import { timed, workerOptions, type WorkerServices } from './context.js';

export const TOPOLOGY_LAYOUT_QUEUE = QUEUE_NAMES.topologyLayout;

export async function runLayoutJob(services: Pick<WorkerServices, 'orm' | 'logger'>, job: LayoutJob): Promise<{ nodes: number; duration_ms: number }> {
  const db = new Db(services.orm.em.fork());
  const { graph, digest } = job.timeline
    ? await timelineGraph(db, job.organization_id, { ...job, ...job.timeline }).then((u) => ({ graph: u, digest: u.digest }))
    : await graphAt(db, job.organization_id, job, job.as_of);
  const started = performance.now();
  try {
    // Where the map already stands, it stays: new nodes placed near their neighbours; elk only for a new map.
    const previous = await previousPositions(db, job.network_id, job.view, job.digest);
    const positions = placeIncrementally(graph.nodes, graph.edges, previous) ?? await layoutGraph(graph.nodes, graph.edges);
    const durationMs = performance.now() - started;
    // The graph drawn again is the one answered (same inputs, same instant): its digest is the job's.
    for (const d of new Set([job.digest, digest])) await storeLayout(db, { ...job, digest: d }, { positions, durationMs });
    return { nodes: graph.nodes.length, duration_ms: Math.round(durationMs) };
  } catch (err) {
    await storeLayout(db, job, { error: (err as Error).message.slice(0, 500) });
    throw err;
  }
}

export async function startTopologyLayout(services: WorkerServices): Promise<Worker> {
  return new Worker(
    TOPOLOGY_LAYOUT_QUEUE,
    timed(services, TOPOLOGY_LAYOUT_QUEUE, (job) => runLayoutJob(services, job.data as LayoutJob)),
    // One at a time per process: a layout is CPU work in this thread.
    workerOptions(services, 1),
  );
}
