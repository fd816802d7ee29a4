/**
 * HTTP-agnostic domain errors. Services throw these; exactly one mapper per service turns a
 * `kind` into a status code and a wire body. `expected` errors are the caller's fault and are
 * logged quietly; anything else is a bug.
 */
export type AppErrorKind =
  | 'validation'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'not_acceptable'
  | 'unsupported_media_type'
  | 'conflict'
  | 'precondition_failed'
  | 'gone'
  | 'payload_too_large'
  | 'request_timeout'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

export interface AppErrorOptions {
  readonly code?: string;
  readonly details?: Readonly<Record<string, unknown>>;
  readonly cause?: unknown;
  readonly expected?: boolean;
}

export class AppError extends Error {
  readonly kind: AppErrorKind;
  readonly code: string;
  readonly details: Readonly<Record<string, unknown>>;
  readonly expected: boolean;

  constructor(kind: AppErrorKind, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.kind = kind;
    this.code = options.code ?? kind.toUpperCase();
    this.details = options.details ?? {};
    this.expected = options.expected ?? kind !== 'internal';
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not Found', options: AppErrorOptions = {}) {
    super('not_found', message, options);
  }
}

export class UnauthenticatedError extends AppError {
  constructor(message = 'Authentication required.', options: AppErrorOptions = {}) {
    super('unauthenticated', message, options);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'Access Denied.', options: AppErrorOptions = {}) {
    super('forbidden', message, options);
  }
}

export class ConflictError extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super('conflict', message, options);
  }
}

/** A request field failed a rule; `code` is the service's detail code (e.g. INVALID_LIMIT). */
export class ValidationError extends AppError {
  constructor(message: string, field: string | undefined, code: string) {
    super('validation', message, { code, details: field === undefined ? { code } : { field, code } });
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/** A conditional request (If-Match) whose condition no longer holds: the client's copy is stale. */
export class PreconditionFailedError extends AppError {
  constructor(message = 'Precondition Failed', options: AppErrorOptions = {}) {
    super('precondition_failed', message, options);
  }
}
