import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { AppError, NotFoundError, UnauthenticatedError } from '../errors/app-error.js';
import { loggerOptions } from '../log/logger.js';
import { nulInUrl } from './nul.js';
import { trackInFlight, type InFlight } from './in-flight.js';
import { RouteHistogram } from './route-histogram.js';

export interface HttpAppOptions {
  /** Service name, used for the logger and the metrics prefix. */
  readonly name: string;
  readonly logLevel: string;
  /** Largest accepted request body in bytes. */
  readonly bodyLimit?: number;
  /**
   * Time allowed to receive a request's headers, and again its body once the headers are in, ms:
   * beyond it the answer is 408 and the connection is closed, however steadily bytes trickle in.
   */
  readonly requestTimeout?: number;
  /** Whether X-Forwarded-* headers from a proxy in front of us are trusted. */
  readonly trustProxy?: boolean;
  /**
   * Checked by GET /readyz: the state of each dependency (`degraded` = working on a fallback, still
   * ready); throws when one the service cannot work without is unavailable.
   */
  readonly ready: () => Promise<Readiness | void>;
  /** Renders errors Fastify raises before routing (bad URL, over-long path parameter). */
  readonly frameworkErrors?: FastifyServerOptions['frameworkErrors'];
  /** Metrics of the service in this process, shared by its listeners; a new one when absent. */
  readonly registry?: Registry;
  /**
   * Whether this listener serves GET /metrics: `open` (a management port), `{ token }` (only with
   * `Authorization: Bearer <token>`), or `off` (the default: not served, so 404).
   */
  readonly metrics?: MetricsExposure;
  /** Paths whose next segment is a secret (a capability token): logged cut short. */
  readonly secretPathPrefixes?: readonly string[];
  /**
   * What `GET /` answers: where the service's API, documentation and tools are, as a JSON object
   * of paths (a newcomer who opens the bare address learns where to go); 404 when absent.
   */
  readonly index?: Readonly<Record<string, string>>;
  /**
   * Renders errors Node's HTTP parser raises before there is a request at all (bytes that are
   * not HTTP, headers over 16 KiB, headers too slow): the body of a raw answer on the socket.
   */
  readonly clientErrorBody?: (
    status: number,
    message: string,
  ) => { readonly contentType: string; readonly body: string };
}

export type Readiness = Readonly<Record<string, 'ok' | 'degraded'>>;
export type MetricsExposure = 'open' | 'off' | { readonly token: string };

/** A registry with the process's default metrics (CPU, memory, event loop), one per service and process. */
export function newMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Where a service's /metrics is served, from its settings: with a management port, there (and
 * behind the token when one is set); without one, on the API port only behind the token.
 */
export function metricsExposure(
  token: string | undefined,
  listener: 'api' | 'management',
  hasManagementPort: boolean,
): MetricsExposure {
  if (listener === 'management') return token ? { token } : 'open';
  if (hasManagementPort || !token) return 'off';
  return { token };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

function requireToken(request: FastifyRequest, token: string): void {
  const header = request.headers.authorization;
  const given = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : '';
  // Hashes of equal length, so that the comparison takes the same time whatever was sent.
  if (!timingSafeEqual(digest(given), digest(token)))
    throw new UnauthenticatedError('GET /metrics needs the metrics token: Authorization: Bearer <METRICS_TOKEN>.', {
      code: 'METRICS_TOKEN_REQUIRED',
    });
}

/** Node's parser errors, as the status and message of the answer (the connection then closes). */
function clientErrorAnswer(code: string | undefined): { status: number; message: string } {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, message: 'The request headers did not arrive in time.' };
  if (code === 'HPE_HEADER_OVERFLOW')
    return {
      status: 431,
      message: 'The request line and headers exceed 16 KiB (the URL is too long, or the headers are).',
    };
  return {
    status: 400,
    message: 'The request is not valid HTTP/1.1 (the request line or a header has bytes HTTP does not allow).',
  };
}

/** Whether a request announces a body: its bytes still have to arrive after the headers. */
function announcesBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

const NUL_CODE = { code: 'NUL_CHARACTER', details: { code: 'NUL_CHARACTER' } } as const;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const IN_FLIGHT = new WeakMap<FastifyInstance, InFlight>();
/**
 * How long a closing server, once its handlers have ended, keeps connections that are not idle:
 * answers still being written, and clients that never sent a whole request.
 */
export const CLOSE_GRACE_MS = 2_000;

/** The in-flight tracker of an app built here: hooks that do database work pass it their work. */
export function inFlightOf(app: FastifyInstance): InFlight {
  const tracker = IN_FLIGHT.get(app);
  if (!tracker) throw new Error('inFlightOf: the app was not built by buildHttpApp');
  return tracker;
}

/**
 * Builds a Fastify instance with what every service needs: request ids (honouring a sane
 * incoming X-Request-Id), size and time limits, pino with secrets redacted, /healthz, /readyz
 * and Prometheus /metrics (only when `metrics` says so). It does not listen; `main.ts` does.
 */
export function buildHttpApp(options: HttpAppOptions): FastifyInstance {
  const requestTimeout = options.requestTimeout ?? 30_000;
  const fastifyOptions: FastifyServerOptions = {
    logger: loggerOptions(options.logLevel, options.name, options.secretPathPrefixes),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    requestTimeout,
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    trustProxy: options.trustProxy ?? false,
    requestIdHeader: false,
    // Fastify's two lines per request are written at info level: skip the calls when they would
    // be dropped anyway.
    ...(['info', 'debug', 'trace'].includes(options.logLevel)
      ? {}
      : { logController: new LogController({ disableRequestLogging: true }) }),
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 1000 },
    ...(options.frameworkErrors ? { frameworkErrors: options.frameworkErrors } : {}),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ...(options.clientErrorBody ? { clientErrorHandler: clientErrorHandler(options.clientErrorBody) } : {}),
  };
  const app = Fastify(fastifyOptions);
  // Before any route: closing waits (bounded) for handlers still running after their client left.
  const inFlight = trackInFlight(app);
  IN_FLIGHT.set(app, inFlight);
  app.addHook('onClose', async () => inFlight.idle(8_000));
  // Node's close waits for every connection that is not idle, and a connection that has sent no
  // whole request is not: a client of another protocol waiting for a greeting, a request line cut
  // off. Close would wait for their 60 s timeouts. Once the handlers have ended, what is left gets
  // a moment, then is cut. (Not awaited: the server's close runs after the preClose hooks.)
  app.addHook('preClose', (done) => {
    void inFlight.idle(8_000).then(() => setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS).unref());
    done();
  });
  // A pino child per request costs microseconds that matter on fast routes; when request logging
  // is off (level above info), the child is only built if something is actually logged.
  app.setChildLoggerFactory((logger, bindings, opts) =>
    (logger as unknown as { isLevelEnabled(l: string): boolean }).isLevelEnabled('info')
      ? logger.child(bindings, opts)
      : lazyChild(logger, bindings, opts),
  );

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // Before routing and authentication, the same on every dialect: nothing stored can hold a NUL,
    // so a path with one names nothing (404), and a query parameter with one is invalid (400).
    const nul = nulInUrl(request.url);
    if (nul)
      return done(
        nul === 'path'
          ? new NotFoundError('Not Found', NUL_CODE)
          : new AppError(
              'validation',
              'The query string contains a NUL character (%00), which no parameter accepts.',
              NUL_CODE,
            ),
      );
    if (announcesBody(request.headers)) bodyDeadline(request, reply, requestTimeout);
    done();
  });

  const registry = options.registry ?? newMetricsRegistry();
  const duration = new RouteHistogram(
    'http_request_duration_seconds',
    'HTTP request duration by route template and status code',
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registry,
  );
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const series = duration.series(`${request.method} ${route} ${reply.statusCode}`, () => ({
      method: request.method,
      route,
      status_code: String(reply.statusCode),
    }));
    if (series) duration.observe(series, reply.elapsedTime / 1000);
    done();
  });

  addOpsRoutes(app, registry, options);
  const index = options.index;
  if (index)
    app.get('/', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      return { service: options.name, ...index, health: '/healthz', readiness: '/readyz' };
    });
  return app;
}

function addOpsRoutes(
  app: FastifyInstance,
  registry: Registry,
  options: Pick<HttpAppOptions, 'ready' | 'metrics'>,
): void {
  app.get('/healthz', { logLevel: 'warn' }, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });
  app.get('/readyz', { logLevel: 'warn' }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    try {
      const checks = (await options.ready()) ?? {};
      const degraded = Object.values(checks).includes('degraded');
      return { status: degraded ? 'degraded' : 'ready', checks };
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });
  const exposure = options.metrics ?? 'off';
  if (exposure === 'off') return;
  app.get('/metrics', { logLevel: 'warn' }, async (request, reply) => {
    if (exposure !== 'open') requireToken(request, exposure.token);
    reply.header('content-type', registry.contentType).header('cache-control', 'no-store');
    return registry.metrics();
  });
}

/**
 * The management listener of a service: /healthz, /readyz and /metrics on a port of their own
 * (a process without the API role, or an operator who keeps /metrics off the public port).
 * `renderError` is the service's error mapper, so that its 401 and 404 look like the API's.
 */
export function buildManagementApp(options: {
  name: string;
  logLevel: string;
  registry: Registry;
  ready: HttpAppOptions['ready'];
  metrics: MetricsExposure;
  renderError: (err: Error, request: FastifyRequest, reply: FastifyReply) => unknown;
}): FastifyInstance {
  const app = Fastify({
    logger: loggerOptions(options.logLevel, `${options.name}-management`),
    requestIdHeader: false,
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: true,
  });
  app.setErrorHandler((err: Error, request, reply) => options.renderError(err, request, reply));
  app.setNotFoundHandler((request, reply) =>
    options.renderError(
      new NotFoundError(`No route ${request.method} ${request.url.split('?')[0]} on the management port.`, {
        code: 'ROUTE_NOT_FOUND',
      }),
      request,
      reply,
    ),
  );
  addOpsRoutes(app, options.registry, options);
  return app;
}

/**
 * Node's requestTimeout stops counting once the headers are in, so a body sent a byte at a time
 * would hold the connection and the handler forever. The body gets the same time again: if it
 * is still incomplete then, the body reader fails with a 408 (the service renders it), and the
 * connection closes after the answer.
 */
function bodyDeadline(request: FastifyRequest, reply: FastifyReply, ms: number): void {
  const raw = request.raw;
  const timer = setTimeout(() => {
    if (raw.complete || reply.sent) return;
    reply.header('connection', 'close');
    const err = new AppError('request_timeout', `The request body did not arrive within ${ms} ms.`, {
      code: 'REQUEST_TIMEOUT',
      details: { code: 'REQUEST_TIMEOUT' },
    });
    // The body reader listens for errors while it reads; with nobody reading, just hang up.
    if (raw.listenerCount('error') > 0) raw.emit('error', err);
    else raw.socket?.destroy();
  }, ms);
  timer.unref();
  const clear = () => clearTimeout(timer);
  raw.once('end', clear);
  raw.once('close', clear);
  reply.raw.once('close', clear);
}

/** Answers parser errors (no request exists yet) in the service's own error format. */
function clientErrorHandler(render: NonNullable<HttpAppOptions['clientErrorBody']>) {
  return function (this: FastifyInstance, err: Error & { code?: string }, socket: Duplex): void {
    // A reset connection is gone already: there is nobody to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, message } = clientErrorAnswer(err.code);
    this.log.debug({ err }, 'client error');
    if (socket.writable) {
      const { contentType, body } = render(status, message);
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

type Logger = FastifyBaseLogger;

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request logger that becomes a real pino child only when a line is actually written: the level
 * is checked before the child is built. A class, so that each request allocates one small object
 * and no closures.
 */
class LazyChildLogger {
  #child: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}
  private get real(): Logger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }
  private write(level: Level, args: unknown[]): void {
    const target = (this.#child ?? this.parent) as unknown as { isLevelEnabled(l: string): boolean };
    if (target.isLevelEnabled(level)) (this.real[level] as (...a: unknown[]) => void)(...args);
  }
  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real.child(bindings, options);
  }
}

function lazyChild(logger: Logger, bindings: Bindings, opts: ChildLoggerOptions): Logger {
  return new LazyChildLogger(logger, bindings, opts) as unknown as Logger;
}

/**
 * Listens, and closes gracefully on SIGTERM/SIGINT: stop accepting, let in-flight requests end,
 * then run `onClose` (close the database). A second signal exits at once.
 */
export async function listen(app: FastifyInstance, host: string, port: number): Promise<string> {
  return app.listen({ host, port });
}

export function closeOnSignals(
  closers: readonly (() => Promise<void>)[],
  log: { info(msg: string): void; error(o: object, msg: string): void },
): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      process.exit(1);
    }
    closing = true;
    log.info(`${signal} received, closing`);
    const timer = setTimeout(() => {
      log.error({}, 'graceful close timed out after 10 s, exiting');
      process.exit(1);
    }, 10_000);
    timer.unref();
    Promise.all(closers.map((close) => close()))
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        log.error({ err }, 'error while closing');
        process.exit(1);
      });
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}
