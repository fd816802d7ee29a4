import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ForbiddenError, UnauthenticatedError } from '../../platform/errors/app-error.js';
import type { Principal } from '../engine/define.js';
import { BadRequestError } from '../engine/errors.js';
import { origin, type HttpSettings } from '../engine/http.js';
import { subscribeSelectors } from './authorization.js';
import type { MercureHub } from './hub.js';
import { mercureSelectors, signJwt, verifyJwt } from './jwt.js';
import { anyMatch } from './topic-selector.js';

/**
 * The hub's HTTP face, as the Mercure specification has it: `GET <hub>?topic=…` subscribes
 * (server-sent events; `Last-Event-ID` header or `lastEventID` parameter to catch up), `POST
 * <hub>` publishes (form-encoded `topic`, `data`, `private`, `id`, `type`, `retry`; a publisher
 * token). Tokens are HS256 JWTs with a `mercure` claim, sent as `Authorization: Bearer`, the
 * `mercureAuthorization` cookie or the `authorization` query parameter (what an EventSource can
 * do). `GET <hub>/token` gives an API-key holder a subscriber token for what that key may read
 * (decision 0038): that is how the admin subscribes.
 */

export const MERCURE_PATH = '/.well-known/mercure';

export interface MercureRouteOptions extends HttpSettings {
  readonly hub: MercureHub;
  readonly secret: string;
  readonly authenticate: (apiKey: string) => Promise<Principal | null>;
  /** Path of the accounts (`/api/users`), whose IRIs authorize private updates. */
  readonly usersPath: string;
  readonly tokenTtlSeconds: number;
}

export function hubUrl(request: FastifyRequest, settings: HttpSettings): string {
  return `${origin(request, settings)}${MERCURE_PATH}`;
}

function queryOf(request: FastifyRequest): URLSearchParams {
  const url = request.raw.url ?? '';
  const q = url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
}

function cookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The token a request carries, if any: header, then cookie, then query parameter. */
function tokenOf(request: FastifyRequest, query: URLSearchParams): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth === 'string' && /^Bearer\s+/i.test(auth)) return auth.replace(/^Bearer\s+/i, '').trim();
  return cookie(request, 'mercureAuthorization') ?? query.get('authorization') ?? undefined;
}

export function registerMercureRoutes(app: FastifyInstance, options: MercureRouteOptions): void {
  const { hub } = options;
  const claimsOf = (request: FastifyRequest, query: URLSearchParams) => {
    const token = tokenOf(request, query);
    if (token === undefined) return undefined;
    const claims = verifyJwt(token, options.secret);
    if (!claims) throw new UnauthenticatedError('Invalid or expired Mercure token.');
    return claims;
  };

  app.get(MERCURE_PATH, async (request: FastifyRequest, reply: FastifyReply) => {
    const query = queryOf(request);
    const selectors = query.getAll('topic').filter((t) => t !== '');
    if (selectors.length === 0) throw new BadRequestError('Missing "topic" parameter.');
    if (selectors.length > 100) throw new BadRequestError('At most 100 "topic" parameters.');
    const claims = claimsOf(request, query);
    const header = request.headers['last-event-id'];
    const lastEventId = (typeof header === 'string' ? header : undefined) ?? query.get('lastEventID') ?? undefined;
    reply.hijack();
    const res = reply.raw;
    const headers: Record<string, string | number | string[]> = {};
    for (const [name, value] of Object.entries(reply.getHeaders()))
      if (value !== undefined) headers[name] = value as string | number | string[];
    res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream',
      'cache-control': 'private, no-cache, no-store, must-revalidate, max-age=0',
      'x-accel-buffering': 'no',
      connection: 'close',
      'last-event-id': hub.lastEventId(),
    });
    res.write(':\n\n');
    hub.attach(res, { selectors, authorized: mercureSelectors(claims, 'subscribe') }, lastEventId);
  });

  app.post(MERCURE_PATH, async (request, reply) => {
    const type = String(request.headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim()
      .toLowerCase();
    if (type !== 'application/x-www-form-urlencoded')
      return reply
        .code(415)
        .header('content-type', 'text/plain; charset=utf-8')
        .send('Content-Type must be application/x-www-form-urlencoded.');
    const claims = claimsOf(request, new URLSearchParams());
    if (!claims) throw new UnauthenticatedError('A publisher token is required.');
    const form = new URLSearchParams(typeof request.body === 'string' ? request.body : '');
    const topics = form.getAll('topic').filter((t) => t !== '');
    if (topics.length === 0) throw new BadRequestError('Missing "topic" parameter.');
    const allowed = mercureSelectors(claims, 'publish');
    if (!topics.every((t) => anyMatch(allowed, [t])))
      throw new ForbiddenError('The token may not publish to these topics.');
    const retry = form.get('retry');
    if (retry !== null && !/^\d{1,9}$/.test(retry)) throw new BadRequestError('"retry" must be a whole number.');
    const id = form.get('id');
    const eventType = form.get('type');
    const published = await hub.publish({
      topics,
      data: form.get('data') ?? '',
      private: form.has('private'),
      ...(id ? { id } : {}),
      ...(eventType ? { type: eventType } : {}),
      ...(retry !== null ? { retry: Number(retry) } : {}),
    });
    return reply.code(200).header('content-type', 'text/plain; charset=utf-8').send(published);
  });

  app.get(`${MERCURE_PATH}/token`, async (request, reply) => {
    const key = request.headers['x-api-key'];
    if (typeof key !== 'string' || key === '') throw new UnauthenticatedError('Full authentication is required.');
    const principal = key.length <= 200 ? await options.authenticate(key) : null;
    if (!principal) throw new UnauthenticatedError('Invalid credentials.');
    const base = origin(request, options);
    const subscribe = subscribeSelectors(principal, base, options.usersPath);
    const exp = Math.floor(Date.now() / 1000) + options.tokenTtlSeconds;
    const token = signJwt({ mercure: { subscribe }, exp }, options.secret);
    return reply
      .code(200)
      .header('cache-control', 'no-store')
      .header('content-type', 'application/json; charset=utf-8')
      .send(JSON.stringify({ token, hub: hubUrl(request, options), subscribe, expiresIn: options.tokenTtlSeconds }));
  });
}
