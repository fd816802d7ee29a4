import { errorCodes, type FastifyInstance } from 'fastify';
import { ownBuffer } from '../workers/tasks.js';
import { WorkerPoolError, type WorkerPool } from '../workers/pool.js';

/**
 * Replaces Fastify's JSON body parser with one that parses bodies of `offloadAbove` bytes or more
 * in a worker thread (`pool` runs `parseJsonTask` as task `parseJson`), so that a request of
 * megabytes does not hold every other request up while JSON.parse reads it. Smaller bodies, and
 * the answers to bad JSON, are Fastify's own.
 */
export function parseLargeJsonOffThread(app: FastifyInstance, pool: WorkerPool, offloadAbove: number): void {
  const small = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length < offloadAbove) {
      small(request, bytes.toString('utf8'), done);
      return;
    }
    const own = ownBuffer(bytes);
    pool.run<unknown>('parseJson', bytes, own ? [own] : []).then(
      (value) => done(null, value),
      (err: unknown) => done(err instanceof WorkerPoolError ? err : new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined),
    );
  });
}
