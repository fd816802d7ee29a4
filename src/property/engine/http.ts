import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../platform/errors/app-error.js';
import { jsonDeeperThan, jsonTooDeepMessage } from '../../platform/json-depth.js';
import { nulPath } from '../../platform/http/nul.js';
import {
  ConstraintViolationError,
  reasonPhrase,
  renderError,
  STATUS_BY_KIND,
  typeViolation,
  MethodNotAllowedError,
  violationStatus,
} from './errors.js';
import { negotiateErrorFormat, requireContentType, type Format } from './negotiation.js';

/**
 * HTTP helpers shared by the engine's routes: absolute URLs, the headers API Platform puts on
 * every response, bodies with ETags, and the one error mapper of the property service.
 */

export const HYDRA_DOC_REL = 'http://www.w3.org/ns/hydra/core#apiDocumentation';
const JSONLD_ERROR_LINK = '<http://www.w3.org/ns/hydra/error>; rel="http://www.w3.org/ns/json-ld#error"';
const HOST = /^(?:[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

export interface HttpSettings {
  readonly prefix: string;
  readonly hydraPrefix: boolean;
  /** Absolute base URL to use instead of the request's scheme and Host. */
  readonly publicUrl: string | undefined;
  /** Used when a request carries no usable Host header. */
  readonly fallbackOrigin: string;
  /** Path of a Mercure hub to advertise in every answer's Link header (`rel="mercure"`). */
  readonly mercureHubPath?: string;
}

export function origin(request: FastifyRequest, settings: HttpSettings): string {
  if (settings.publicUrl) return settings.publicUrl;
  const host = request.host;
  return host && HOST.test(host) ? `${request.protocol}://${host}` : settings.fallbackOrigin;
}

export function docsUrl(request: FastifyRequest, settings: HttpSettings): string {
  return `${origin(request, settings)}${settings.prefix}/docs.jsonld`;
}

export function apiDocLink(request: FastifyRequest, settings: HttpSettings): string {
  const docs = `<${docsUrl(request, settings)}>; rel="${HYDRA_DOC_REL}"`;
  return settings.mercureHubPath
    ? `${docs},<${origin(request, settings)}${settings.mercureHubPath}>; rel="mercure"`
    : docs;
}

export const CONTENT_TYPE: Readonly<Record<Format, string>> = {
  jsonld: 'application/ld+json; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

/** The strong ETag of a JSON body as sent: the quoted md5 of its text, as API Platform makes it. */
export function etagOf(body: unknown): string {
  return `"${hash('md5', JSON.stringify(body))}"`;
}

/** Sends a JSON body; GET and HEAD successes get an ETag and honour If-None-Match (304). */
export function sendJson(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  contentType: string,
  body: unknown,
): FastifyReply {
  const text = JSON.stringify(body);
  reply.code(status).header('content-type', contentType);
  if ((request.method === 'GET' || request.method === 'HEAD') && status === 200) {
    const etag = `"${hash('md5', text)}"`;
    reply.header('etag', etag);
    const inm = request.headers['if-none-match'];
    if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) {
      return reply.code(304).send();
    }
  }
  return reply.send(text);
}

/** Parses a request body as JSON after checking its Content-Type; syntax errors are violations. */
export function jsonBody(request: FastifyRequest, accepted: readonly string[]): unknown {
  requireContentType(request.headers['content-type'], accepted);
  const raw = request.body;
  if (typeof raw !== 'string') return raw;
  // Refused before it is parsed: nothing after the parse need walk a body of thousands of levels.
  if (jsonDeeperThan(raw)) throw new ConstraintViolationError([typeViolation('', jsonTooDeepMessage)]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConstraintViolationError([typeViolation('', 'Syntax error')], 'request');
  }
  // PostgreSQL cannot store a NUL and SQLite can: refused here, once, for every field of every resource.
  const at = nulPath(parsed);
  if (at)
    throw new ConstraintViolationError([
      typeViolation(
        at.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join(''),
        'This value must not contain a NUL character (U+0000).',
      ),
    ]);
  return parsed;
}

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
  message?: string;
  validation?: unknown;
}

/** The property service's one error mapper: every failure becomes a Hydra or problem+json body. */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  err: unknown,
  settings: HttpSettings,
): FastifyReply {
  let status: number;
  let detail: string;
  let violations: ConstraintViolationError['violations'] | undefined;
  if (err instanceof ConstraintViolationError) {
    status = violationStatus(err, settings.hydraPrefix);
    detail = err.message;
    violations = err.violations;
  } else if (err instanceof AppError) {
    status = STATUS_BY_KIND[err.kind];
    detail = err.message;
    if (err instanceof MethodNotAllowedError) reply.header('allow', err.allow.join(', '));
    if (status >= 500) request.log.error({ err }, 'request failed');
  } else {
    const e = (err ?? {}) as FastifyLikeError;
    if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
      status = e.statusCode;
      // Fastify's own messages may echo the URL or internals; only a few are worth passing on.
      detail =
        e.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? 'Request body is too large.'
          : e.code?.startsWith('FST_ERR_CTP') || e.code === undefined
            ? (e.message ?? reasonPhrase(status))
            : reasonPhrase(status);
    } else {
      status = 500;
      detail = `Internal Server Error (request id ${request.id})`;
      request.log.error({ err }, 'unhandled error');
    }
  }
  const format = negotiateErrorFormat(request.headers.accept);
  const rendered = renderError(status, detail, violations, format, settings.hydraPrefix, settings.prefix);
  reply.header('link', `${apiDocLink(request, settings)},${JSONLD_ERROR_LINK}`);
  return reply.code(status).header('content-type', rendered.contentType).send(JSON.stringify(rendered.body));
}
