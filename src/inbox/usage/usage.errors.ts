import { NotFoundError } from '../../platform/errors/app-error.js';

/** A pod outside the key's organization or scope (or organization metrics for a narrower key). */
export class PodNotFoundError extends NotFoundError {
  constructor(podId: string) {
    super(`No pod ${podId} in the scope of this API key.`, { code: 'POD_NOT_FOUND', details: { pod_id: podId } });
  }
}

/** Organization-level metrics for a key limited to a pod or an inbox: outside its scope. */
export class OrganizationMetricsNotFoundError extends NotFoundError {
  constructor() {
    super('No organization-level metrics in the scope of this API key.', { code: 'METRICS_NOT_FOUND' });
  }
}
