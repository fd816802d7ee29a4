import { NotFoundError } from '../../platform/errors/app-error.js';

export class ThreadNotFoundError extends NotFoundError {
  constructor(threadId: string) {
    super(`Thread ${threadId} not found.`, {
      code: 'THREAD_NOT_FOUND',
      details: { field: 'thread_id', code: 'THREAD_NOT_FOUND' },
    });
  }
}
