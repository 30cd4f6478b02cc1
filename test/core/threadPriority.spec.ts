// Pool threads run below the event loop (issue 22): the thread's own nice value is raised, the
// process's main thread keeps its own.
import { expect } from 'chai';
import { getPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import { lowerThisThreadsPriority } from '../../src/core/threadPriority.js';

describe('core/threadPriority: CPU-bound threads yield to the event loop', () => {
  it("lowers a worker thread's priority and leaves the main thread's alone", async function () {
    if (process.platform !== 'linux') this.skip();
    const before = getPriority();
    expect(lowerThisThreadsPriority(), 'the main thread is never lowered').to.equal(false);
    // A thread that runs the real function and reports its own nice value (read by its thread id).
    const code = `
      const { parentPort } = require('node:worker_threads');
      const { readlinkSync } = require('node:fs');
      const { getPriority } = require('node:os');
      import(${JSON.stringify(new URL('../../src/core/threadPriority.ts', import.meta.url).href)}).then((m) => {
        const lowered = m.lowerThisThreadsPriority();
        const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
        parentPort.postMessage({ lowered, nice: getPriority(tid) });
      });`;
    const thread = new Worker(code, { eval: true });
    const seen = await new Promise<{ lowered: boolean; nice: number }>((resolve, reject) => { thread.once('message', resolve); thread.once('error', reject); });
    await thread.terminate();
    expect(seen).to.deep.equal({ lowered: true, nice: Math.max(before, 10) });
    expect(getPriority(), 'the main thread').to.equal(before);
  });
});
