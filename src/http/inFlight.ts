// Requests being handled, so that a shutdown closes the database and Redis only after the last one
// ended. `server.close()` waits for connections, not for handlers: a client that gave up (closed
// its socket) leaves its handler running, which then met a destroyed pool ("driver has already been
// destroyed", logged as an unhandled error) and, for a write, was cut off between statements.
import type Koa from 'koa';

export class RequestsInFlight {
  private count = 0;
  private waiters: Array<() => void> = [];

  readonly middleware: Koa.Middleware = async (_ctx, next) => {
    this.count++;
    try {
      await next();
    } finally {
      if (--this.count === 0) for (const wake of this.waiters.splice(0)) wake();
    }
  };

  /** Resolves when no request is being handled (at once when none is). */
  idle(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}
