import { ConflictError, NotFoundError, ValidationError } from '../../platform/errors/app-error.js';

/** At most this many inbox ids and pod ids per webhook (AgentMail's limit). */
export const MAX_FILTER_IDS = 10;

export class WebhookNotFoundError extends NotFoundError {
  constructor(webhookId: string) {
    super(`Webhook ${webhookId} not found.`, {
      code: 'WEBHOOK_NOT_FOUND',
      details: { field: 'webhook_id', code: 'WEBHOOK_NOT_FOUND' },
    });
  }
}

export class InvalidWebhookUrlError extends ValidationError {
  constructor(reason: string) {
    super(`url ${reason}`, 'url', 'INVALID_URL');
  }
}

/** The url points at a private, loopback or link-local address (SSRF guard). */
export class WebhookUrlNotAllowedError extends ValidationError {
  constructor(host: string) {
    super(
      `url: ${host} is a private, loopback, link-local or reserved address; webhooks must reach a public address.`,
      'url',
      'WEBHOOK_URL_NOT_ALLOWED',
    );
  }
}

export class InvalidEventTypeError extends ValidationError {
  constructor(field: string, eventType: string, allowed: readonly string[]) {
    super(
      `${field}: ${JSON.stringify(eventType)} is not an event type; use any of: ${allowed.join(', ')}.`,
      field,
      'INVALID_EVENT_TYPE',
    );
  }
}

export class UnknownInboxIdError extends ValidationError {
  constructor(field: string, inboxId: string) {
    super(`${field}: no inbox ${inboxId} in this organization.`, field, 'UNKNOWN_INBOX_ID');
  }
}

export class UnknownPodIdError extends ValidationError {
  constructor(field: string, podId: string) {
    super(`${field}: no pod ${podId} in this organization.`, field, 'UNKNOWN_POD_ID');
  }
}

export class TooManyFilterIdsError extends ValidationError {
  constructor(field: string, kind: 'inbox_ids' | 'pod_ids') {
    super(`${field}: a webhook may name at most ${MAX_FILTER_IDS} ${kind}.`, field, 'TOO_MANY_IDS');
  }
}

export class WebhookClientIdTakenError extends ConflictError {
  constructor(clientId: string) {
    super(`Another webhook already has client_id ${JSON.stringify(clientId)}.`, {
      code: 'CLIENT_ID_TAKEN',
      details: { field: 'client_id', code: 'CLIENT_ID_TAKEN' },
    });
  }
}

/** A test event goes to enabled webhooks only: the delivery worker sends nothing to a disabled one. */
export class WebhookDisabledError extends ConflictError {
  constructor(webhookId: string) {
    super(`Webhook ${webhookId} is disabled; enable it to send a test event.`, {
      code: 'WEBHOOK_DISABLED',
      details: { field: 'webhook_id', code: 'WEBHOOK_DISABLED' },
    });
  }
}
