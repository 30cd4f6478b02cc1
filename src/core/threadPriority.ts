// CPU-bound worker threads run at a lower scheduling priority than the event loop that started
// them: on a machine whose cores are all busy, the kernel then gives the API's and the
// worker's main threads (health checks, other tenants' small requests, webhook deliveries) the CPU
// first, and the big drawing or layout takes what is left. Linux only: a thread's own id comes from
// /proc/thread-self, and setpriority() on a thread id changes that thread alone. Elsewhere, or if the
// call is refused, the thread keeps its priority.
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { isMainThread } from 'node:worker_threads';

/** nice 10: about a tenth of a core's share against a main thread at nice 0 (CFS weights 110 / 1024). */
export const BACKGROUND_NICE = 10;

export function lowerThisThreadsPriority(nice = BACKGROUND_NICE): boolean {
  if (isMainThread) return false; // never the event loop itself
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid)) return false;
    setPriority(tid, Math.max(getPriority(tid), nice)); // never raised: that needs privileges
    return true;
  } catch {
    return false;
  }
}
