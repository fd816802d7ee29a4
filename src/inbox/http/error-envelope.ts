import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type AppErrorKind } from '../../platform/errors/app-error.js';

/**
 * The inbox service's wire vocabulary for errors: `{ error: { type, message, details } }`. The
 * spec names `validation_error` and `INVALID_EMAIL`; the other values are ours, kept here only.
 */
export type InboxErrorType =
  | 'validation_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'precondition_failed'
  | 'gone'
  | 'payload_too_large'
  | 'request_timeout'
  | 'unsupported_media_type'
  | 'rate_limit_exceeded'
  | 'service_unavailable'
  | 'internal_error';

export const ERROR_BY_KIND: Readonly<Record<AppErrorKind, { status: number; type: InboxErrorType }>> = {
  validation: { status: 400, type: 'validation_error' },
  unauthenticated: { status: 401, type: 'authentication_error' },
  forbidden: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'not_found' },
  method_not_allowed: { status: 405, type: 'method_not_allowed' },
  not_acceptable: { status: 406, type: 'validation_error' },
  conflict: { status: 409, type: 'conflict' },
  precondition_failed: { status: 412, type: 'precondition_failed' },
  gone: { status: 410, type: 'gone' },
  payload_too_large: { status: 413, type: 'payload_too_large' },
  request_timeout: { status: 408, type: 'request_timeout' },
  unsupported_media_type: { status: 415, type: 'unsupported_media_type' },
  rate_limited: { status: 429, type: 'rate_limit_exceeded' },
  unavailable: { status: 503, type: 'service_unavailable' },
  internal: { status: 500, type: 'internal_error' },
};

export interface ErrorBody {
  error: { type: InboxErrorType; message: string; details?: Record<string, unknown>; request_id?: string };
}

/** JSON-pointer-ish Ajv path (`/to/0`) → the spec's field name (`to`), dots for nesting. */
function fieldFromInstancePath(path: string, missing?: string): string | undefined {
  const parts = path.split('/').filter(Boolean);
  if (missing) parts.push(missing);
  const named = parts.filter((p) => !/^\d+$/.test(p));
  return named.length ? named.join('.') : undefined;
}

/** The body of an answer to bytes that never became a request (see buildHttpApp's clientErrorBody). */
export function inboxClientErrorBody(status: number, message: string): { contentType: string; body: string } {
  const error =
    status === 408
      ? { type: 'request_timeout', code: 'REQUEST_TIMEOUT' }
      : status === 431
        ? { type: 'validation_error', code: 'REQUEST_TOO_LARGE' }
        : { type: 'validation_error', code: 'MALFORMED_REQUEST' };
  const body: ErrorBody = { error: { type: error.type as InboxErrorType, message, details: { code: error.code } } };
  return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}

/** The status and body of an application error: for HTTP answers, and for the MCP door's error results. */
export function appErrorBody(err: AppError): { status: number; body: ErrorBody } {
  const m = ERROR_BY_KIND[err.kind];
  return {
    status: m.status,
    body: {
      error: {
        type: m.type,
        message: err.message,
        details: { ...err.details, ...(err.details.code ? {} : { code: err.code }) },
      },
    },
  };
}

/** The one error mapper of the inbox service. */
export function sendInboxError(request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  let status: number;
  let body: ErrorBody;
  const fe = err as FastifyError & {
    validation?: { instancePath: string; keyword: string; params: Record<string, unknown>; message?: string }[];
  };
  if (err instanceof AppError) {
    ({ status, body } = appErrorBody(err));
    if (status >= 500) request.log.error({ err }, 'request failed');
    // RFC 9110: a 401 names the scheme that would have worked.
    if (status === 401) reply.header('www-authenticate', 'Bearer realm="agentmail"');
    const retryAfter = err.details.retry_after_seconds;
    if (status === 429 && typeof retryAfter === 'number') reply.header('retry-after', String(retryAfter));
  } else if (fe?.validation) {
    const first = fe.validation[0];
    const field = fieldFromInstancePath(
      first?.instancePath ?? '',
      first?.keyword === 'required' ? String(first.params.missingProperty) : undefined,
    );
    const code =
      first?.keyword === 'required'
        ? 'REQUIRED'
        : first?.keyword === 'additionalProperties'
          ? 'UNKNOWN_FIELD'
          : 'INVALID_VALUE';
    const where = fe.validationContext === 'body' ? '' : ` in ${fe.validationContext}`;
    status = 400;
    body = {
      error: {
        type: 'validation_error',
        message: `${field ?? 'request'}${where}: ${first?.message ?? 'is invalid'}`,
        details: field ? { field, code } : { code },
      },
    };
  } else if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    status = fe.statusCode;
    const type: InboxErrorType =
      status === 413
        ? 'payload_too_large'
        : status === 415
          ? 'unsupported_media_type'
          : status === 404
            ? 'not_found'
            : 'validation_error';
    const message =
      fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
        ? 'The request body is not valid JSON.'
        : status === 413
          ? 'The request body is too large.'
          : status === 414
            ? 'The URL is too long.'
            : fe.code?.startsWith('FST_ERR_CTP')
              ? fe.message
              : 'Bad request.';
    body = {
      error: {
        type,
        message,
        details: { code: fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ? 'INVALID_JSON' : (fe.code ?? 'BAD_REQUEST') },
      },
    };
  } else {
    status = 500;
    request.log.error({ err }, 'unhandled error');
    body = { error: { type: 'internal_error', message: 'Internal server error.', request_id: request.id } };
  }
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').send(body);
}
