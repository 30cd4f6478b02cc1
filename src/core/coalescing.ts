// A job that many signals ask for (a NOTIFY per commit, a timer) but that must never run twice at
// once: a call while it runs asks for exactly one more run after it, so no signal is lost and
// bursts collapse.
export interface CoalescingRunner {
  /** Runs now, or once more after the run in progress. */
  run(): void;
  /** Resolves when no run is in progress. */
  idle(): Promise<void>;
}

export function coalescing(fn: () => Promise<void>, shouldRun: () => boolean = () => true): CoalescingRunner {
  let running: Promise<void> | undefined;
  let again = false;
  return {
    run() {
      if (!shouldRun()) return;
      if (running) {
        again = true;
        return;
      }
      running = (async () => {
        do {
          again = false;
          await fn();
        } while (again && shouldRun());
        running = undefined;
      })();
    },
    idle: () => running ?? Promise.resolve(),
  };
}
