import { NotFoundError } from '../../platform/errors/app-error.js';

/** Organization-level metrics for a key limited to a pod or an inbox: outside its scope. */
export class OrganizationMetricsNotFoundError extends NotFoundError {
  constructor() {
    super('No organization-level metrics in the scope of this API key.', { code: 'METRICS_NOT_FOUND' });
  }
}
