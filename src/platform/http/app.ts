import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { NotFoundError, UnauthenticatedError } from '../errors/app-error.js';
import { loggerOptions } from '../log/logger.js';
import { trackInFlight, type InFlight } from './in-flight.js';
import { RouteHistogram } from './route-histogram.js';

export interface HttpAppOptions {
  /** Service name, used for the logger and the metrics prefix. */
  readonly name: string;
  readonly logLevel: string;
  /** Largest accepted request body in bytes. */
  readonly bodyLimit?: number;
  /** Time allowed to receive a whole request (headers and body), ms. */
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
export function metricsExposure(token: string | undefined, listener: 'api' | 'management', hasManagementPort: boolean): MetricsExposure {
  if (listener === 'management') return token ? { token } : 'open';
  if (hasManagementPort || !token) return 'off';
  return { token };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

function requireToken(request: FastifyRequest, token: string): void {
  const header = request.headers.authorization;
  const given = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : '';
  // Hashes of equal length, so that the comparison takes the same time whatever was sent.
  if (!timingSafeEqual(digest(given), digest(token))) throw new UnauthenticatedError('GET /metrics needs the metrics token: Authorization: Bearer <METRICS_TOKEN>.', { code: 'METRICS_TOKEN_REQUIRED' });
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const IN_FLIGHT = new WeakMap<FastifyInstance, InFlight>();

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
  const fastifyOptions: FastifyServerOptions = {
    logger: loggerOptions(options.logLevel, options.name),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    requestTimeout: options.requestTimeout ?? 30_000,
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    trustProxy: options.trustProxy ?? false,
    requestIdHeader: false,
    // Fastify's two lines per request are written at info level: skip the calls when they would
    // be dropped anyway.
    ...(['info', 'debug', 'trace'].includes(options.logLevel) ? {} : { logController: new LogController({ disableRequestLogging: true }) }),
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 1000 },
    ...(options.frameworkErrors ? { frameworkErrors: options.frameworkErrors } : {}),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  };
  const app = Fastify(fastifyOptions);
  // Before any route: closing waits (bounded) for handlers still running after their client left.
  const inFlight = trackInFlight(app);
  IN_FLIGHT.set(app, inFlight);
  app.addHook('onClose', async () => inFlight.idle(8_000));
  // A pino child per request costs microseconds that matter on fast routes; when request logging
  // is off (level above info), the child is only built if something is actually logged.
  app.setChildLoggerFactory((logger, bindings, opts) => ((logger as unknown as { isLevelEnabled(l: string): boolean }).isLevelEnabled('info') ? logger.child(bindings, opts) : lazyChild(logger, bindings, opts)));

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  const registry = options.registry ?? newMetricsRegistry();
  const duration = new RouteHistogram('http_request_duration_seconds', 'HTTP request duration by route template and status code', [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registry);
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const series = duration.series(`${request.method} ${route} ${reply.statusCode}`, () => ({ method: request.method, route, status_code: String(reply.statusCode) }));
    if (series) duration.observe(series, reply.elapsedTime / 1000);
    done();
  });

  addOpsRoutes(app, registry, options);
  return app;
}

function addOpsRoutes(app: FastifyInstance, registry: Registry, options: Pick<HttpAppOptions, 'ready' | 'metrics'>): void {
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
export function buildManagementApp(options: { name: string; logLevel: string; registry: Registry; ready: HttpAppOptions['ready']; metrics: MetricsExposure; renderError: (err: Error, request: FastifyRequest, reply: FastifyReply) => unknown }): FastifyInstance {
  const app = Fastify({ logger: loggerOptions(options.logLevel, `${options.name}-management`), requestIdHeader: false, genReqId: () => randomUUID(), return503OnClosing: true, forceCloseConnections: true });
  app.setErrorHandler((err: Error, request, reply) => options.renderError(err, request, reply));
  app.setNotFoundHandler((request, reply) => options.renderError(new NotFoundError(`No route ${request.method} ${request.url.split('?')[0]} on the management port.`, { code: 'ROUTE_NOT_FOUND' }), request, reply));
  addOpsRoutes(app, options.registry, options);
  return app;
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

export function closeOnSignals(closers: readonly (() => Promise<void>)[], log: { info(msg: string): void; error(o: object, msg: string): void }): void {
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
