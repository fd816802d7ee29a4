import type { FastifyInstance, RouteOptions } from 'fastify';

/**
 * Counts the route handlers (and any work passed to `track`) still running, so that closing
 * can wait for them before the database goes away. `app.close()` resolves once the sockets are
 * closed, but the handler of a request whose client has gone is still running then; without
 * this wait it fails against a destroyed database and logs a 500.
 */
export interface InFlight {
  track<T>(work: Promise<T>): Promise<T>;
  /** Resolves when nothing is running, or after `timeoutMs`. */
  idle(timeoutMs: number): Promise<void>;
}

export function trackInFlight(app: FastifyInstance): InFlight {
  let active = 0;
  let waiters: (() => void)[] = [];
  const finish = () => {
    active -= 1;
    if (active === 0) {
      for (const wake of waiters) wake();
      waiters = [];
    }
  };
  // One promise per tracked piece of work (`finally` makes three), with handlers made once.
  const settled = <T>(value: T): T => {
    finish();
    return value;
  };
  const failed = (err: unknown): never => {
    finish();
    throw err;
  };
  const track = <T>(work: Promise<T>): Promise<T> => {
    active += 1;
    return work.then(settled, failed);
  };
  app.addHook('onRoute', (route: RouteOptions) => {
    const handler = route.handler;
    route.handler = function trackedHandler(this: FastifyInstance, request, reply) {
      active += 1;
      let result: unknown;
      try {
        result = handler.call(this, request, reply);
      } catch (err) {
        finish();
        throw err;
      }
      if (result instanceof Promise) return result.then(settled, failed);
      finish();
      return result;
    } as RouteOptions['handler'];
  });
  return {
    track,
    idle(timeoutMs) {
      if (active === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
