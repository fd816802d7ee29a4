import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { isUniqueViolation } from '../../platform/db/dialect.js';
import type { Ids } from '../../platform/ids.js';
import { isAllowedHostLiteral } from '../../platform/net/egress.js';
import { podBelongsTo } from '../pods/pod.repository.js';
import { type KeyOwner, inScope, requirePermission } from '../core/scope.js';
import { podInScope } from '../pods/pod-scope.js';
import { checkHeaderName, checkHeaders, mergeHeaders } from './webhook-headers.js';
import type { InboxDatabase } from '../schema/database.js';
import { EVENT_TYPES } from '../core/events.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { ValidationError } from '../../platform/errors/app-error.js';
import { parseLimit } from '../lists/list-query.js';
import { findInboxesByAddresses } from '../inboxes/inbox.repository.js';
import { requireScopedInbox } from '../inboxes/inbox-scope.js';
import { normalizeInboxId } from '../core/inbox.js';
import {
  InvalidEventTypeError,
  InvalidWebhookUrlError,
  MAX_FILTER_IDS,
  TooManyFilterIdsError,
  UnknownInboxIdError,
  UnknownPodIdError,
  WebhookClientIdTakenError,
  WebhookDisabledError,
  WebhookNotFoundError,
  WebhookUrlNotAllowedError,
} from './webhook.errors.js';
import { WEBHOOK_SECRET_PREFIX } from './webhook.client.js';
import type { EventService } from '../events/event.service.js';
import {
  deleteWebhook,
  findWebhook,
  findWebhookByClientId,
  findWebhookForUpdate,
  insertWebhook,
  listDeliveries,
  listWebhooks,
  updateWebhook,
  updateWebhookHeaders,
  type Webhook,
  type WebhookChanges,
} from './webhook.repository.js';

/** RFC 2104 recommends an HMAC key at least as long as the hash output (32 bytes for SHA-256). */
const SECRET_BYTES = 32;
const MAX_URL_LENGTH = 2048;

/** The body of create and replace (PUT). */
export interface WebhookInput {
  readonly url: string;
  readonly eventTypes?: readonly string[];
  readonly inboxIds?: readonly string[];
  readonly podIds?: readonly string[];
  readonly clientId?: string;
  readonly enabled?: boolean;
  /** Custom delivery headers (create only; updateHeaders changes them later). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Where a webhook lives: the organization (no scope), one pod, or one inbox (of its pod). */
export type WebhookScope = { readonly podId: string; readonly inboxId: string | null };

/** A pod or inbox named by a scoped route (`/v0/pods/:pod_id/webhooks`, `/v0/inboxes/:inbox_id/webhooks`). */
export type WebhookScopeAddress =
  { readonly level: 'pod'; readonly podId: string } | { readonly level: 'inbox'; readonly inboxId: string };

/** The body of PATCH …/headers. */
export interface WebhookHeadersChange {
  readonly headers?: Readonly<Record<string, string>>;
  readonly removeHeaders?: readonly string[];
}

/** The body of PATCH. */
export interface WebhookPatch {
  readonly addInboxIds?: readonly string[];
  readonly removeInboxIds?: readonly string[];
  readonly addPodIds?: readonly string[];
  readonly removePodIds?: readonly string[];
  readonly eventTypes?: readonly string[];
  readonly enabled?: boolean;
}

export interface ListQuery {
  readonly limit?: number;
  readonly pageToken?: string;
  readonly ascending?: boolean;
}

export interface WebhookServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  /** The database's commit batcher, shared with every other writer. */
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  /** INBOX_WEBHOOK_ALLOW_PRIVATE: let URLs name private, loopback and link-local hosts. */
  readonly allowPrivateUrls: boolean;
  /** The outbox: a test event and its one delivery job are written there (sendTest). */
  readonly events: Pick<EventService, 'emitWebhookTest'>;
  /** Wakes the job runners after a commit that queued a delivery. */
  readonly notifyJobs: () => void;
}

const unique = <T>(items: readonly T[]): T[] => [...new Set(items)];

export function createWebhookService({
  db,
  commits,
  clock,
  ids,
  allowPrivateUrls,
  events,
  notifyJobs,
}: WebhookServiceDeps) {
  /** The URL as stored: http(s), absolute, no credentials, and (unless allowed) no private literal host. */
  function checkUrl(raw: string): string {
    const value = raw.trim();
    if (value.length > MAX_URL_LENGTH)
      throw new InvalidWebhookUrlError(`must be at most ${MAX_URL_LENGTH} characters.`);
    // The URL parser silently drops tabs and newlines; refuse them instead of storing a URL that differs from the one used.
    if (/\s/.test(value)) throw new InvalidWebhookUrlError('must not contain whitespace.');
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new InvalidWebhookUrlError('is not an absolute URL.');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new InvalidWebhookUrlError('must use http or https.');
    if (url.username || url.password)
      throw new InvalidWebhookUrlError(
        'must not contain credentials; authenticate deliveries with the signing secret.',
      );
    if (!url.hostname) throw new InvalidWebhookUrlError('has no host.');
    if (!allowPrivateUrls && !isAllowedHostLiteral(url.hostname)) throw new WebhookUrlNotAllowedError(url.hostname);
    return value;
  }

  function checkEventTypes(field: string, eventTypes: readonly string[] | undefined): string[] | null {
    if (!eventTypes) return null;
    for (const t of eventTypes)
      if (!(EVENT_TYPES as readonly string[]).includes(t)) throw new InvalidEventTypeError(field, t, EVENT_TYPES);
    const types = unique(eventTypes);
    return types.length ? types : null;
  }

  async function checkInboxIds(owner: KeyOwner, field: string, raw: readonly string[]): Promise<string[]> {
    const wanted = unique(raw.map(normalizeInboxId));
    if (wanted.length > MAX_FILTER_IDS) throw new TooManyFilterIdsError(field, 'inbox_ids');
    const owned = new Set(
      (await findInboxesByAddresses(db, wanted)).filter((i) => inScope(owner, i)).map((i) => i.inboxId),
    );
    const missing = wanted.find((id) => !owned.has(id));
    if (missing !== undefined) throw new UnknownInboxIdError(field, missing);
    return wanted;
  }

  async function checkPodIds(owner: KeyOwner, field: string, raw: readonly string[]): Promise<string[]> {
    const wanted = unique(raw.map((p) => p.trim()));
    if (wanted.length > MAX_FILTER_IDS) throw new TooManyFilterIdsError(field, 'pod_ids');
    for (const podId of wanted) {
      if (
        owner.inboxId !== undefined ||
        (owner.podId !== undefined && podId !== owner.podId) ||
        !(await podBelongsTo(db, podId, owner.organizationId))
      )
        throw new UnknownPodIdError(field, podId);
    }
    return wanted;
  }

  /** Validates a create/replace body into the stored fields (without id, secret and times). */
  async function settingsOf(owner: KeyOwner, input: WebhookInput) {
    const url = checkUrl(input.url);
    const eventTypes = checkEventTypes('event_types', input.eventTypes);
    const inboxIds = input.inboxIds ? await checkInboxIds(owner, 'inbox_ids', input.inboxIds) : [];
    const podIds = input.podIds ? await checkPodIds(owner, 'pod_ids', input.podIds) : [];
    return {
      url,
      eventTypes,
      inboxIds: inboxIds.length ? inboxIds : null,
      podIds: podIds.length ? podIds : null,
      clientId: input.clientId ?? null,
      enabled: input.enabled ?? true,
    };
  }

  /**
   * A webhook of the caller's scope (a pod key: its pod's; an inbox key: its inbox's), else 404;
   * with `scope` (the pod and inbox routes), also one of that pod or exactly that inbox.
   */
  async function mustFind(owner: KeyOwner, webhookId: string, scope?: WebhookScope): Promise<Webhook> {
    const webhook = await findWebhook(db, owner.organizationId, webhookId);
    if (
      !webhook ||
      !inScope(owner, {
        organizationId: webhook.organizationId,
        podId: webhook.scopePodId,
        inboxId: webhook.scopeInboxId,
      })
    )
      throw new WebhookNotFoundError(webhookId);
    if (
      scope &&
      (webhook.scopePodId !== scope.podId || (scope.inboxId !== null && webhook.scopeInboxId !== scope.inboxId))
    )
      throw new WebhookNotFoundError(webhookId);
    return webhook;
  }

  /** The pod or inbox a scoped route names, in the key's organization and scope (404 otherwise). */
  async function scopeOf(owner: KeyOwner, address: WebhookScopeAddress): Promise<WebhookScope> {
    if (address.level === 'pod') {
      const pod = await podInScope(db, owner, address.podId.trim());
      return { podId: pod.podId, inboxId: null };
    }
    const inbox = await requireScopedInbox(db, owner, address.inboxId);
    return { podId: inbox.podId, inboxId: inbox.inboxId };
  }

  /** A pod webhook's inbox filter names inboxes of that pod only. */
  async function checkInboxesInPod(
    owner: KeyOwner,
    field: string,
    inboxIds: readonly string[],
    podId: string,
  ): Promise<void> {
    const inPod = new Set(
      (await findInboxesByAddresses(db, inboxIds))
        .filter((i) => i.organizationId === owner.organizationId && i.podId === podId)
        .map((i) => i.inboxId),
    );
    const outside = inboxIds.find((id) => !inPod.has(id));
    if (outside !== undefined) throw new UnknownInboxIdError(field, outside);
  }

  /** Creates a webhook of `scope` (default: the key's own scope), or returns the one created before with the same client_id. */
  async function create(
    owner: KeyOwner,
    input: WebhookInput,
    scope?: WebhookScope,
  ): Promise<{ webhook: Webhook; created: boolean }> {
    const visible = (w: Webhook) =>
      inScope(owner, { organizationId: w.organizationId, podId: w.scopePodId, inboxId: w.scopeInboxId });
    if (input.clientId) {
      const existing = await findWebhookByClientId(db, owner.organizationId, input.clientId);
      if (existing && visible(existing)) return { webhook: existing, created: false };
      if (existing) throw new WebhookClientIdTakenError(input.clientId);
    }
    const settings = await settingsOf(owner, input);
    if (scope && settings.inboxIds) await checkInboxesInPod(owner, 'inbox_ids', settings.inboxIds, scope.podId);
    const headers = input.headers === undefined ? null : checkHeaders('headers', input.headers);
    if (headers) mergeHeaders(null, headers, []);
    const now = clock.now().toISOString();
    const webhook: Webhook = {
      ...settings,
      webhookId: `ep_${ids.uuid().replace(/-/g, '')}`,
      organizationId: owner.organizationId,
      // Standard base64, not base64url: the Svix libraries decode the key with a strict decoder.
      secret: `${WEBHOOK_SECRET_PREFIX}${Buffer.from(ids.token(SECRET_BYTES), 'base64url').toString('base64')}`,
      disabledReason: null,
      // A scoped key's webhook belongs to its scope, a scoped route's to the route's (and hears only events there).
      scopePodId: scope ? scope.podId : (owner.podId ?? null),
      scopeInboxId: scope ? scope.inboxId : (owner.inboxId ?? null),
      headers,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await insertWebhook(db, webhook);
    } catch (err) {
      // A concurrent create with the same client_id won the race.
      if (!isUniqueViolation(err) || !input.clientId) throw err;
      const existing = await findWebhookByClientId(db, owner.organizationId, input.clientId);
      if (!existing) throw err;
      if (!visible(existing)) throw new WebhookClientIdTakenError(input.clientId);
      return { webhook: existing, created: false };
    }
    return { webhook, created: true };
  }

  return {
    /** Creates a webhook with a new signing secret, or returns the one created before with the same client_id. */
    async create(owner: KeyOwner, input: WebhookInput): Promise<{ webhook: Webhook; created: boolean }> {
      requirePermission(owner, 'webhookCreate');
      return create(owner, input);
    },

    async get(owner: KeyOwner, webhookId: string): Promise<Webhook> {
      requirePermission(owner, 'webhookRead');
      return mustFind(owner, webhookId);
    },

    async list(owner: KeyOwner, query: ListQuery) {
      requirePermission(owner, 'webhookRead');
      const limit = parseLimit(query.limit);
      const after = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const direction = after?.direction ?? (query.ascending ? 'asc' : 'desc');
      const scope = {
        ...(owner.podId !== undefined ? { podId: owner.podId } : {}),
        ...(owner.inboxId !== undefined ? { inboxId: owner.inboxId } : {}),
      };
      const rows = await listWebhooks(db, owner.organizationId, {
        limit,
        direction,
        ...(after ? { after } : {}),
        scope,
      });
      return { limit, ...page(rows, limit, (w) => ({ sort: w.createdAt, tiebreak: w.webhookId }), direction) };
    },

    /** PUT: replaces every setting; omitted fields take their create defaults. Id, secret and created_at stay. */
    async replace(owner: KeyOwner, webhookId: string, input: WebhookInput): Promise<Webhook> {
      requirePermission(owner, 'webhookUpdate');
      await mustFind(owner, webhookId);
      const settings = await settingsOf(owner, input);
      const changes: WebhookChanges = { ...settings, disabledReason: null, updatedAt: clock.now().toISOString() };
      try {
        if (!(await updateWebhook(db, owner.organizationId, webhookId, changes)))
          throw new WebhookNotFoundError(webhookId);
      } catch (err) {
        if (isUniqueViolation(err) && settings.clientId !== null)
          throw new WebhookClientIdTakenError(settings.clientId);
        throw err;
      }
      return mustFind(owner, webhookId);
    },

    /**
     * PATCH: adds and removes filter ids ((current ∪ add) ∖ remove), and replaces event_types or
     * enabled when given. Only added ids are checked: ids of inboxes deleted since stay removable.
     */
    async update(owner: KeyOwner, webhookId: string, patch: WebhookPatch, scope?: WebhookScope): Promise<Webhook> {
      requirePermission(owner, 'webhookUpdate');
      await mustFind(owner, webhookId, scope);
      const addInboxIds = patch.addInboxIds ? await checkInboxIds(owner, 'add_inbox_ids', patch.addInboxIds) : [];
      if (scope?.podId !== undefined && addInboxIds.length)
        await checkInboxesInPod(owner, 'add_inbox_ids', addInboxIds, scope.podId);
      const addPodIds = patch.addPodIds ? await checkPodIds(owner, 'add_pod_ids', patch.addPodIds) : [];
      const eventTypes = patch.eventTypes ? checkEventTypes('event_types', patch.eventTypes) : undefined;
      const removeInboxIds = new Set((patch.removeInboxIds ?? []).map(normalizeInboxId));
      const removePodIds = new Set((patch.removePodIds ?? []).map((p) => p.trim()));
      await commits.run(async (trx) => {
        const current = await findWebhookForUpdate(trx, owner.organizationId, webhookId);
        if (!current) throw new WebhookNotFoundError(webhookId);
        const inboxIds = unique([...(current.inboxIds ?? []), ...addInboxIds]).filter((id) => !removeInboxIds.has(id));
        const podIds = unique([...(current.podIds ?? []), ...addPodIds]).filter((id) => !removePodIds.has(id));
        if (inboxIds.length > MAX_FILTER_IDS) throw new TooManyFilterIdsError('add_inbox_ids', 'inbox_ids');
        if (podIds.length > MAX_FILTER_IDS) throw new TooManyFilterIdsError('add_pod_ids', 'pod_ids');
        await updateWebhook(trx, owner.organizationId, webhookId, {
          url: current.url,
          clientId: current.clientId,
          enabled: patch.enabled ?? current.enabled,
          // A user's own decision (either way) replaces the service's reason for disabling.
          disabledReason: patch.enabled === undefined ? current.disabledReason : null,
          eventTypes: eventTypes === undefined ? current.eventTypes : eventTypes,
          inboxIds: inboxIds.length ? inboxIds : null,
          podIds: podIds.length ? podIds : null,
          updatedAt: clock.now().toISOString(),
        });
      });
      return mustFind(owner, webhookId);
    },

    async delete(owner: KeyOwner, webhookId: string, scope?: WebhookScope): Promise<void> {
      requirePermission(owner, 'webhookDelete');
      await mustFind(owner, webhookId, scope);
      if (!(await commits.run((trx) => deleteWebhook(trx, owner.organizationId, webhookId))))
        throw new WebhookNotFoundError(webhookId);
    },

    /** The pod or inbox of a scoped route, checked against the key (404 outside its organization or scope). */
    scopeOf,

    /** pods.webhooks.create / inboxes.webhooks.create: a webhook that only ever sees its scope's events. */
    async createScoped(
      owner: KeyOwner,
      scope: WebhookScope,
      input: WebhookInput,
    ): Promise<{ webhook: Webhook; created: boolean }> {
      requirePermission(owner, 'webhookCreate');
      return create(owner, input, scope);
    },

    async getScoped(owner: KeyOwner, scope: WebhookScope, webhookId: string): Promise<Webhook> {
      requirePermission(owner, 'webhookRead');
      return mustFind(owner, webhookId, scope);
    },

    /** The webhooks of this pod (its inboxes' included) or of this inbox, newest first. */
    async listScoped(owner: KeyOwner, scope: WebhookScope, query: ListQuery) {
      requirePermission(owner, 'webhookRead');
      const limit = parseLimit(query.limit);
      const after = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const direction = after?.direction ?? (query.ascending ? 'asc' : 'desc');
      const rows = await listWebhooks(db, owner.organizationId, {
        limit,
        direction,
        scope: { podId: scope.podId, ...(scope.inboxId !== null ? { inboxId: scope.inboxId } : {}) },
        ...(after ? { after } : {}),
      });
      return { limit, ...page(rows, limit, (w) => ({ sort: w.createdAt, tiebreak: w.webhookId }), direction) };
    },

    /** getHeaders: the names of the custom headers, never their values. */
    async headerNames(owner: KeyOwner, webhookId: string, scope?: WebhookScope): Promise<string[]> {
      requirePermission(owner, 'webhookRead');
      const webhook = await mustFind(owner, webhookId, scope);
      return Object.keys(webhook.headers ?? {}).sort((a, b) => a.localeCompare(b));
    },

    /** updateHeaders: sets, replaces and removes custom headers (a name may not be both set and removed). */
    async updateHeaders(
      owner: KeyOwner,
      webhookId: string,
      change: WebhookHeadersChange,
      scope?: WebhookScope,
    ): Promise<void> {
      requirePermission(owner, 'webhookUpdate');
      if (change.headers === undefined && change.removeHeaders === undefined)
        throw new ValidationError('Give headers, remove_headers or both.', 'headers', 'NO_HEADER_CHANGE');
      const set = change.headers === undefined ? {} : checkHeaders('headers', change.headers);
      const remove = (change.removeHeaders ?? []).map((name) => checkHeaderName('remove_headers', name));
      const both = remove.find((name) => Object.keys(set).some((n) => n.toLowerCase() === name.toLowerCase()));
      if (both !== undefined)
        throw new ValidationError(
          `headers and remove_headers both name ${both}.`,
          'remove_headers',
          'CONFLICTING_HEADERS',
        );
      await mustFind(owner, webhookId, scope);
      await commits.run(async (trx) => {
        const current = await findWebhookForUpdate(trx, owner.organizationId, webhookId);
        if (!current) throw new WebhookNotFoundError(webhookId);
        await updateWebhookHeaders(
          trx,
          owner.organizationId,
          webhookId,
          mergeHeaders(current.headers, set, remove),
          clock.now().toISOString(),
        );
      });
    },

    /**
     * A test event to this webhook through the ordinary delivery path (decision 0049): signed,
     * retried and logged in its deliveries like any event, whatever its event type filter.
     * Changes what the receiver sees, so it takes the update permission; a disabled webhook is a 409.
     */
    async sendTest(
      owner: KeyOwner,
      webhookId: string,
      scope?: WebhookScope,
    ): Promise<{ eventId: string; createdAt: string }> {
      requirePermission(owner, 'webhookUpdate');
      const found = await mustFind(owner, webhookId, scope);
      if (!found.enabled) throw new WebhookDisabledError(webhookId);
      const event = await commits.run(async (trx) => {
        // Read again under the row lock: a delete or disable that committed since is not raced.
        const current = await findWebhookForUpdate(trx, owner.organizationId, webhookId);
        if (!current) throw new WebhookNotFoundError(webhookId);
        if (!current.enabled) throw new WebhookDisabledError(webhookId);
        return events.emitWebhookTest(trx, {
          organizationId: current.organizationId,
          webhookId,
          podId: current.scopePodId,
          inboxId: current.scopeInboxId,
        });
      });
      notifyJobs();
      return { eventId: event.eventId, createdAt: event.createdAt };
    },

    /** The delivery log of a webhook, newest attempt first unless ascending. */
    async deliveries(owner: KeyOwner, webhookId: string, query: ListQuery & { eventId?: string }) {
      requirePermission(owner, 'webhookRead');
      await mustFind(owner, webhookId);
      const limit = parseLimit(query.limit);
      const after = query.pageToken ? decodeCursor(query.pageToken, 'integer') : undefined;
      const direction = after?.direction ?? (query.ascending ? 'asc' : 'desc');
      const rows = await listDeliveries(db, webhookId, {
        limit,
        direction,
        ...(after ? { afterId: after.tiebreak as number } : {}),
        ...(query.eventId !== undefined ? { eventId: query.eventId } : {}),
      });
      return { limit, ...page(rows, limit, (d) => ({ sort: d.createdAt, tiebreak: d.id }), direction) };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
