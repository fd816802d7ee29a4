import { randomUUID } from 'node:crypto';
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import { ownBuffer } from '../workers/tasks.js';
import { WorkerPoolError, type WorkerPool } from '../workers/pool.js';
import { JsonBodyScanner, type BytesAt, type LargeValue } from './json-scanner.js';
import { JsonTooDeepError, jsonDeeperThan, MAX_JSON_DEPTH } from '../json-depth.js';

/**
 * A large string value that a `BytesSink` decoded as it arrived stands in its object as an empty
 * string, with its bytes under this key (`receivedBytes`).
 */
const RECEIVED_BYTES = Symbol('receivedBytes');

/** The bytes a sink decoded for `holder[key]` while the body arrived (then `holder[key]` is ''), if any. */
export function receivedBytes(holder: object): Buffer | undefined {
  return (holder as { [RECEIVED_BYTES]?: Buffer })[RECEIVED_BYTES];
}

export interface JsonBodyOptions {
  /**
   * Bodies from this size on are read in pieces by a `JsonBodyScanner`; what remains of them (the
   * skeleton) is parsed in a worker thread if it is itself this large.
   */
  readonly largeBodyBytes: number;
  /** String values from this raw size on are cut out of a scanned body and parsed apart, in a worker thread. */
  readonly largeStringBytes: number;
  /** Sinks for a route's large strings by their place (e.g. attachments' base64), or undefined. */
  readonly bytesAt?: (request: FastifyRequest) => BytesAt | undefined;
}

/**
 * Replaces Fastify's JSON body parser (docs/decisions/0029-large-json-bodies-read-in-pieces.md).
 * Bodies under `largeBodyBytes` are read whole and parsed by Fastify's own parser. Larger ones are
 * read in pieces as they arrive: every large string value is kept apart (or decoded by its sink)
 * and parsed alone in a worker thread, the rest is parsed as JSON (in a worker thread if it is
 * itself large), and the large values are put back in their places. No copy of the whole body is
 * ever made; answers to bad JSON and to bodies over the route's limit are Fastify's. A body nested
 * deeper than MAX_JSON_DEPTH is refused before it is parsed, by either reader (JsonTooDeepError).
 */
export function parseJsonBodies(app: FastifyInstance, pool: WorkerPool, options: JsonBodyOptions): void {
  const fastifyParser = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');

  /** Fastify's parser, for text not nested too deep. */
  function small(request: FastifyRequest, text: string, done: (err: Error | null, value?: unknown) => void): void {
    if (jsonDeeperThan(text)) done(new JsonTooDeepError(), undefined);
    else fastifyParser(request, text, done);
  }

  /** The value of a skeleton: on the event loop under `largeBodyBytes`, in a worker thread from there. */
  function parse(request: FastifyRequest, bytes: Buffer, done: (err: Error | null, value?: unknown) => void): void {
    if (bytes.length < options.largeBodyBytes) {
      small(request, bytes.toString('utf8'), done);
      return;
    }
    const own = ownBuffer(bytes);
    pool.run<unknown>('parseJson', bytes, own ? [own] : []).then(
      (value) => done(null, value),
      (err: unknown) => done(taskFailure(err), undefined),
    );
  }

  /** A large string's value from its JSON (its raw bytes between quotes), parsed in a worker thread. */
  function stringOf(json: Buffer): Promise<string> {
    // Moved, not copied: the buffer is this string's alone (the scanner sized it for it).
    return pool.run<string>('parseJson', json, [json.buffer as ArrayBuffer]);
  }

  async function finish(request: FastifyRequest, scanner: JsonBodyScanner, prefix: string): Promise<unknown> {
    const skeleton = scanner.end();
    const parsed = await new Promise<unknown>((resolve, reject) =>
      parse(request, skeleton, (err, value) => (err ? reject(err) : resolve(value))),
    );
    if (!scanner.large.length) return parsed;
    let values: (string | Buffer)[];
    try {
      values = await Promise.all(
        scanner.large.map((v) => ('bytes' in v.result ? v.result.bytes : stringOf(v.result.json))),
      );
    } catch (err) {
      throw taskFailure(err);
    }
    return restoreLarge(parsed, prefix, scanner.large, values);
  }

  app.addContentTypeParser('application/json', (request, payload, done) => {
    const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024;
    const contentLength = Number(request.headers['content-length']);
    if (contentLength > limit) {
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
      return;
    }
    // Until `largeBodyBytes` have come, the body may still be a small one: kept as it came.
    const early: Buffer[] = [];
    let received = 0;
    let scanner: JsonBodyScanner | undefined;
    let prefix = '';
    const stream = payload as NodeJS.ReadableStream & { receivedEncodedLength?: number };

    const stop = () => {
      stream.removeListener('data', onData);
      stream.removeListener('end', onEnd);
      stream.removeListener('error', onEnd);
    };
    function onData(chunk: Buffer | string) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > limit || (stream.receivedEncodedLength ?? 0) > limit) {
        stop();
        done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
        return;
      }
      try {
        if (scanner) {
          scanner.write(bytes);
          return;
        }
        early.push(bytes);
        if (received < options.largeBodyBytes) return;
        const bytesAt = options.bytesAt?.(request);
        prefix = `\u{f8ff}${randomUUID()}:`;
        scanner = new JsonBodyScanner({
          largeBytes: options.largeStringBytes,
          tokenPrefix: prefix,
          maxDepth: MAX_JSON_DEPTH,
          ...(bytesAt ? { bytesAt } : {}),
          ...(Number.isNaN(contentLength) ? {} : { bodyBytes: contentLength }),
        });
        for (const piece of early.splice(0)) scanner.write(piece);
      } catch (err) {
        // Whatever fails while a body is read (a buffer that cannot be allocated) fails this request, not the process.
        stop();
        done(err instanceof Error ? err : new Error(String(err)), undefined);
      }
    }
    function onEnd(err?: Error & { statusCode?: number }) {
      stop();
      if (err) {
        if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
        done(err, undefined);
        return;
      }
      if (!Number.isNaN(contentLength) && (stream.receivedEncodedLength || received) !== contentLength) {
        done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(), undefined);
        return;
      }
      if (!scanner) {
        // Decoded at once, so a piece that arrived alone needs no copy of its own.
        small(
          request,
          (early.length === 1 ? (early[0] as Buffer) : Buffer.concat(early, received)).toString('utf8'),
          done,
        );
        return;
      }
      finish(request, scanner, prefix).then(
        (value) => done(null, value),
        (error: unknown) => done(error as Error, undefined),
      );
    }
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onEnd);
    stream.resume();
  });
}

/**
 * What a failed parsing task answers: the pool's own failure as it is (a 500: no thread could run
 * it), a body nested too deep as such, and any other failure of the task on its input as the
 * invalid JSON it is (400).
 */
function taskFailure(err: unknown): Error {
  if (err instanceof WorkerPoolError) return err;
  if (err instanceof Error && err.name === 'JsonTooDeepError') return new JsonTooDeepError();
  return new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY();
}

/**
 * Puts every large value back where its token ended up in the parsed skeleton (where JSON.parse
 * put it: a key given twice keeps its last value, as it would have). A decoded value leaves an
 * empty string in its place and its bytes under RECEIVED_BYTES of the same object.
 */
export function restoreLarge(
  parsed: unknown,
  prefix: string,
  large: readonly LargeValue[],
  values: readonly (string | Buffer)[],
): unknown {
  const valueOf = (token: string): string | Buffer | undefined => {
    if (!token.startsWith(prefix)) return undefined;
    const index = Number(token.slice(prefix.length));
    return large[index]?.token === token ? values[index] : undefined;
  };
  const root = typeof parsed === 'string' ? valueOf(parsed) : undefined;
  if (root !== undefined) return typeof root === 'string' ? root : '';
  // Iterative: a deeply nested body must not overflow the stack.
  const pending: object[] = parsed !== null && typeof parsed === 'object' ? [parsed] : [];
  while (pending.length) {
    const holder = pending.pop() as Record<string, unknown>;
    for (const key of Object.keys(holder)) {
      const value = holder[key];
      if (typeof value === 'string') {
        const found = valueOf(value);
        if (found === undefined) continue;
        if (typeof found === 'string') holder[key] = found;
        else {
          holder[key] = '';
          Object.defineProperty(holder, RECEIVED_BYTES, {
            value: found,
            enumerable: false,
            configurable: true,
            writable: true,
          });
        }
      } else if (value !== null && typeof value === 'object') pending.push(value);
    }
  }
  return parsed;
}
