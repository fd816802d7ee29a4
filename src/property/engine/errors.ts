import { AppError, type AppErrorKind } from '../../platform/errors/app-error.js';

/** Symfony constraint codes, reused so that clients of API Platform recognise them. */
export const VIOLATION = {
  notBlank: { code: 'c1051bb4-d103-4f74-8988-acbcafc7fdc3', message: 'This value should not be blank.' },
  notNull: { code: 'ad32d13f-c3d4-423b-909a-857b961eb720', message: 'This value should not be null.' },
  type: { code: 'ba785a8c-82cb-4283-967c-3cf342181b40', message: 'This value should be of type {{ type }}.' },
  choice: { code: '8e179f1b-97aa-4560-a02f-2a8b42e49df7', message: 'The value you selected is not a valid choice.' },
  email: { code: 'bd79c0ab-ddba-46cc-a703-a7a4b08de310', message: 'This value is not a valid email address.' },
  unique: { code: '23bd9dbf-6b9b-41cd-a99e-4844bcf3077f', message: 'This value is already used.' },
  positiveOrZero: {
    code: 'ea4e51d1-3342-48bd-87f1-9e672cd90cad',
    message: 'This value should be either positive or zero.',
  },
  greaterThanOrEqual: {
    code: 'ea4e51d1-3342-48bd-87f1-9e672cd90cad',
    message: 'This value should be greater than or equal to {{ compared_value }}.',
  },
  lessThanOrEqual: {
    code: '30fbb013-d015-4232-8b3b-8f3be97a7e14',
    message: 'This value should be less than or equal to {{ compared_value }}.',
  },
  tooLong: {
    code: 'd94b19cc-114f-4f44-9cc4-4138e80a87b9',
    message: 'This value is too long. It should have {{ limit }} characters or less.',
  },
  dateTime: { code: '1a9da513-2640-4f84-9b6a-4d99dcddc628', message: 'This value is not a valid datetime.' },
  invalidCharacters: {
    code: '35e6a710-aa2e-4719-b58e-24b35749b767',
    message: 'This value contains characters that are not allowed.',
  },
} as const;

export interface Violation {
  readonly propertyPath: string;
  readonly message: string;
  readonly code: string;
  readonly hint?: string;
}

export function violation(
  propertyPath: string,
  kind: keyof typeof VIOLATION,
  params: Record<string, string | number> = {},
  hint?: string,
): Violation {
  const spec = VIOLATION[kind];
  const message = spec.message.replace(/\{\{ (\w+) \}\}/g, (_, key: string) => String(params[key] ?? ''));
  return hint === undefined
    ? { propertyPath, message, code: spec.code }
    : { propertyPath, message, code: spec.code, hint };
}

/** A type error with a message of our own (IRIs, syntax), reported like Symfony's Type constraint. */
export function typeViolation(propertyPath: string, message: string): Violation {
  return { propertyPath, message, code: VIOLATION.type.code };
}

/**
 * Invalid input, with a ConstraintViolationList body. `body`: the request body breaks the
 * resource's constraints (types included), answered 400 in the 3.x wire and 422 in the 4.x wire,
 * as API Platform 4 does; `request`: a query parameter or a body that is no JSON at all, always 400.
 */
export class ConstraintViolationError extends AppError {
  constructor(
    readonly violations: readonly Violation[],
    readonly source: 'body' | 'request' = 'body',
  ) {
    super(
      'validation',
      violations.map((v) => (v.propertyPath ? `${v.propertyPath}: ${v.message}` : v.message)).join('\n'),
      { code: 'CONSTRAINT_VIOLATION' },
    );
  }
}

/** The status of a violation list: 422 for body violations in the 4.x wire (no `hydra:` prefix), else 400. */
export function violationStatus(error: ConstraintViolationError, hydraPrefix: boolean): 400 | 422 {
  return error.source === 'body' && !hydraPrefix ? 422 : 400;
}

/** A query-string or request problem that is not about the body (bad page number): 400 hydra:Error. */
export class BadRequestError extends AppError {
  constructor(message: string) {
    super('validation', message, { code: 'BAD_REQUEST' });
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(readonly allow: readonly string[]) {
    super('method_not_allowed', `Method Not Allowed (Allow: ${allow.join(', ')})`);
  }
}

export const STATUS_BY_KIND: Readonly<Record<AppErrorKind, number>> = {
  validation: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  conflict: 409,
  precondition_failed: 412,
  gone: 410,
  payload_too_large: 413,
  request_timeout: 408,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

const REASON: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function reasonPhrase(status: number): string {
  return REASON[status] ?? 'Error';
}

export type ErrorFormat = 'jsonld' | 'problem';

export interface RenderedError {
  readonly contentType: string;
  readonly body: Record<string, unknown>;
}

/**
 * The error bodies of API Platform 3.x (legacy mode, `hydraPrefix`) or 4.x (unprefixed), plus
 * `status`, which both clients ignore and humans appreciate.
 */
export function renderError(
  status: number,
  detail: string,
  violations: readonly Violation[] | undefined,
  format: ErrorFormat,
  hydraPrefix: boolean,
  prefix: string,
): RenderedError {
  const title = 'An error occurred';
  if (format === 'problem' && violations && !hydraPrefix) {
    // API Platform 4's problem+json of a ConstraintViolationList, without the JSON-LD keys.
    const code = violations.map((v) => v.code).join('-');
    return {
      contentType: 'application/problem+json; charset=utf-8',
      body: { status, violations, detail, description: detail, title, type: `/validation_errors/${code}` },
    };
  }
  if (format === 'problem') {
    const body: Record<string, unknown> = { type: 'https://tools.ietf.org/html/rfc2616#section-10', title, detail };
    if (violations) body.violations = violations;
    body.status = status;
    return { contentType: 'application/problem+json; charset=utf-8', body };
  }
  if (violations) {
    if (hydraPrefix) {
      return {
        contentType: 'application/ld+json; charset=utf-8',
        body: {
          '@context': `${prefix}/contexts/ConstraintViolationList`,
          '@type': 'ConstraintViolationList',
          'hydra:title': title,
          'hydra:description': detail,
          violations,
          status,
        },
      };
    }
    const code = violations.map((v) => v.code).join('-');
    return {
      contentType: 'application/problem+json; charset=utf-8',
      body: {
        '@context': `${prefix}/contexts/ConstraintViolation`,
        '@id': `${prefix}/validation_errors/${code}`,
        '@type': 'ConstraintViolation',
        status,
        violations,
        detail,
        description: detail,
        title,
        type: `/validation_errors/${code}`,
      },
    };
  }
  if (hydraPrefix) {
    return {
      contentType: 'application/ld+json; charset=utf-8',
      body: {
        '@context': `${prefix}/contexts/Error`,
        '@type': 'hydra:Error',
        'hydra:title': title,
        'hydra:description': detail,
        status,
      },
    };
  }
  return {
    contentType: 'application/problem+json; charset=utf-8',
    body: {
      '@context': `${prefix}/contexts/Error`,
      '@id': `${prefix}/errors/${status}`,
      '@type': 'Error',
      title,
      detail,
      status,
      type: `/errors/${status}`,
      description: detail,
    },
  };
}
