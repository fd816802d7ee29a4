import { NotFoundError } from '../../platform/errors/app-error.js';

/** Errors of pods. */

export class PodNotFoundError extends NotFoundError {
  constructor(podId: string) {
    super(`Pod ${podId} not found.`, { code: 'POD_NOT_FOUND', details: { field: 'pod_id', code: 'POD_NOT_FOUND' } });
  }
}
