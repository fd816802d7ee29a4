import { AppError } from '../../platform/errors/app-error.js';

/** Too many failed console sign-ins from one client address in the window: 429 with Retry-After. */
export class ConsoleSignInLimitError extends AppError {
  constructor(limit: number, retryAfterSeconds: number, windowMinutes: number) {
    super(
      'rate_limited',
      `Too many failed sign-ins from this address (at most ${limit} in ${windowMinutes} minutes); retry in ${retryAfterSeconds} s.`,
      {
        code: 'TOO_MANY_SIGN_IN_FAILURES',
        details: { code: 'TOO_MANY_SIGN_IN_FAILURES', retry_after_seconds: retryAfterSeconds },
      },
    );
  }
}
