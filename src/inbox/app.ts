import type { SendService } from './outgoing/send.service.js';
import type { InboxConfig } from './inbox.config.js';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import type { Clock } from '../platform/clock.js';
import type { Database } from '../platform/db/database.js';
import type { GroupCommit } from '../platform/db/group-commit.js';
import { NotFoundError, ValidationError } from '../platform/errors/app-error.js';
import { buildHttpApp, type MetricsExposure, type Readiness } from '../platform/http/app.js';
import type { Registry } from 'prom-client';
import { parseJsonBodies } from '../platform/http/json-body.js';
import type { JsonPath } from '../platform/http/json-scanner.js';
import { createBase64Sink } from './mail/base64.js';
import { nulPath } from '../platform/http/nul.js';
import type { RateLimiter } from '../platform/http/rate-limit.js';
import { schemaCompilers } from '../platform/http/validators.js';
import { SWAGGER_UI_CSP, swaggerUiAsset, swaggerUiHtml } from '../platform/http/swagger-ui.js';
import type { Ids } from '../platform/ids.js';
import { agentRoutes } from './agent/agent.routes.js';
import { AgentSignupDisabledError, type AgentService } from './agent/agent.service.js';
import { apiKeyRoutes } from './api-keys/api-key.routes.js';
import type { ApiKeyService } from './api-keys/api-key.service.js';
import type { ConsoleSessions } from './console/console-session.service.js';
import { podRoutes } from './pods/pod.routes.js';
import { podInboxRoutes } from './inboxes/pod-inbox.routes.js';
import { podThreadRoutes } from './threads/pod-thread.routes.js';
import type { PodService } from './pods/pod.service.js';
import type { InboxDatabase } from './schema/database.js';
import type { Delivery } from './mailstore/delivery.service.js';
import { domainRoutes } from './domains/domain.routes.js';
import type { DomainService } from './domains/domain.service.js';
import { draftRoutes } from './drafts/draft.routes.js';
import type { DraftService } from './drafts/draft.service.js';
import type { EventService } from './events/event.service.js';
import { bearerAuth } from './http/auth.js';
import { ErrorResponse } from './http/common.schemas.js';
import { inboxClientErrorBody, sendInboxError } from './http/error-envelope.js';
import type { InboxApp } from './http/types.js';
import { inboxRoutes } from './inboxes/inbox.routes.js';
import type { InboxService } from './inboxes/inbox.service.js';
import { messageRoutes } from './messages/message.routes.js';
import { inboxPool, LARGE_STRING_BYTES, OFFLOAD_JSON_BYTES } from './offload.js';
import type { MessageService } from './messages/message.service.js';
import { searchRoutes } from './search/search.routes.js';
import { mcpRoutes } from './mcp/mcp.routes.js';
import { consoleRoutes } from './console/console.routes.js';
import type { MessageWaiters } from './mcp/message-waiters.js';
import type { SearchService } from './search/search.service.js';
import { threadRoutes } from './threads/thread.routes.js';
import type { ThreadService } from './threads/thread.service.js';
import { webhookRoutes } from './webhooks/webhook.routes.js';
import { scopedWebhookRoutes } from './webhooks/scoped-webhook.routes.js';
import { accessListRoutes } from './access-lists/access-list.routes.js';
import type { AccessListService } from './access-lists/access-list.service.js';
import { inboxEventRoutes } from './events/inbox-event.routes.js';
import type { InboxEventService } from './events/inbox-event.service.js';
import { usageRoutes } from './usage/usage.routes.js';
import type { UsageService } from './usage/usage.service.js';
import type { WebhookService } from './webhooks/webhook.service.js';

/** Everything the routes use, created once by `service.ts` (and shared with workers and SMTP). */
export interface InboxServices {
  readonly config: InboxConfig;
  readonly db: Kysely<InboxDatabase>;
  /** The database's commit batcher: every unit of work that writes runs in it. */
  readonly commits: GroupCommit<InboxDatabase>;
  /** The one way a message enters storage. */
  readonly delivery: Delivery;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly apiKeys: ApiKeyService;
  /** Web console sign-ins: sessions that stand for an API key (console/). */
  readonly consoleSessions: ConsoleSessions;
  readonly pods: PodService;
  readonly agent: AgentService;
  readonly inboxes: InboxService;
  readonly domains: DomainService;
  readonly events: EventService;
  readonly messages: MessageService;
  /** Send, reply, reply-all, forward and draft sends: validate → compose → deliver (outgoing/). */
  readonly outgoing: SendService;
  readonly drafts: DraftService;
  readonly threads: ThreadService;
  readonly search: SearchService;
  readonly webhooks: WebhookService;
  readonly limiter: RateLimiter;
  readonly accessLists: AccessListService;
  readonly usage: UsageService;
  readonly inboxEvents: InboxEventService;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Routes that need no API key (docs, signed downloads). */
    public?: boolean;
    /**
     * Routes whose body's attachments (`attachments` or `add_attachments`) reach `toSendInput`:
     * a large attachment's base64 is decoded as the body arrives (`receivedBytes`).
     */
    attachmentBytes?: boolean;
    /** The MCP endpoint: its body is JSON-RPC, checked by the MCP door itself (a NUL is a tool error, not a 400). */
    mcp?: boolean;
  }
}

/**
 * A NUL character anywhere in the body is a 400 before any field rule runs: PostgreSQL cannot
 * store one and SQLite can, so letting it through would make the dialects disagree. (URLs are
 * checked for every service by buildHttpApp.)
 */
function refuseNulInBody(body: unknown): void {
  const at = nulPath(body);
  if (!at) return;
  // The top-level field: deeper keys may be the caller's own (header names).
  const field = typeof at[0] === 'string' ? at[0] : undefined;
  throw new ValidationError(
    `${field ?? 'body'}: contains a NUL character (U+0000), which no field accepts.`,
    field,
    'NUL_CHARACTER',
  );
}

/** An attachment's base64 in a send-like body: decoded as it arrives. */
function attachmentBase64At(path: JsonPath, maxRawBytes: number | undefined) {
  return path.length === 3 &&
    (path[0] === 'attachments' || path[0] === 'add_attachments') &&
    typeof path[1] === 'number' &&
    path[2] === 'content'
    ? createBase64Sink(maxRawBytes)
    : undefined;
}

/** Builds the inbox service's Fastify app (no listen). */
export async function buildInboxApp(
  services: InboxServices,
  database: Pick<Database<unknown>, 'ping'>,
  ops: {
    registry?: Registry;
    ready?: () => Promise<Readiness>;
    metrics?: MetricsExposure;
    /** The committed-events feed's waiters for MCP `wait_for_message` (without: it looks once and answers). */
    waiters?: MessageWaiters;
  } = {},
): Promise<InboxApp> {
  const { config } = services;
  // Attachments travel base64-encoded inside JSON: allow for that, text and html at their limits
  // (with room for JSON escapes), and 1 MiB for everything else.
  const bodyLimit = Math.ceil((config.maxAttachmentBytes * 4) / 3) + Math.ceil(2.5 * config.maxBodyBytes) + 1024 * 1024;
  const app = buildHttpApp({
    name: 'inbox',
    index: { api: '/v0', docs: '/v0/docs', openapi: '/v0/openapi.json' },
    logLevel: config.logLevel,
    bodyLimit,
    ready: ops.ready ?? (async () => (await database.ping(), { database: 'ok' })),
    ...(ops.registry ? { registry: ops.registry } : {}),
    ...(ops.metrics ? { metrics: ops.metrics } : {}),
    // Signed download tokens are capabilities: a log line keeps their first characters only.
    secretPathPrefixes: ['/v0/downloads/'],
    requestTimeout: config.requestTimeoutMs,
    trustProxy: config.trustProxy,
    frameworkErrors: (err, request, reply) => sendInboxError(request, reply, err),
    clientErrorBody: inboxClientErrorBody,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const compilers = schemaCompilers(() => app.getSchemas());
  app.setValidatorCompiler(compilers.validatorCompiler);
  app.setSerializerCompiler(compilers.serializerCompiler);
  // JSON only: other media types answer 415 instead of failing validation as strings.
  app.removeContentTypeParser('text/plain');
  // A send of megabytes is read in pieces as it arrives (decision 0029): its text and html kept
  // apart, its attachments decoded on the way; never parsed whole on the event loop.
  parseJsonBodies(app, inboxPool(), {
    largeBodyBytes: OFFLOAD_JSON_BYTES,
    largeStringBytes: LARGE_STRING_BYTES,
    bytesAt: (request) => (request.routeOptions.config?.attachmentBytes ? attachmentBase64At : undefined),
  });
  app.setErrorHandler((err, request, reply) => sendInboxError(request, reply, err));
  app.setNotFoundHandler((request, reply) =>
    sendInboxError(
      request,
      reply,
      new NotFoundError(`No route ${request.method} ${request.url.split('?')[0]}.`, { code: 'ROUTE_NOT_FOUND' }),
    ),
  );
  app.addSchema(ErrorResponse);

  const auth = bearerAuth(services.apiKeys, services.limiter, services.consoleSessions);
  app.addHook('onRequest', async (request, reply) => {
    // Off: the sign-up routes answer 403 with or without a key (decision 0018).
    if (request.routeOptions.config?.agentSignup && !config.agentSignup) throw new AgentSignupDisabledError();
    if (!request.url.startsWith('/v0') || request.routeOptions.config?.public || request.routeOptions.url === undefined)
      return;
    await auth(request, reply);
  });
  app.addHook('preValidation', async (request) => {
    // The SDK creates an inbox with no body at all; treat a missing body as an empty object.
    if (request.body === undefined && request.routeOptions.schema?.body) request.body = {};
    if (!request.routeOptions.config?.mcp) refuseNulInBody(request.body);
  });

  await app.register(swagger, {
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Inbox Messaging Service API',
        description: 'Email inboxes for software agents; compatible with the AgentMail v0 API.',
        version: '0.1.0',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key (am_…)' } } },
      security: [{ bearer: [] }],
    },
  });

  inboxRoutes(app, services.inboxes);
  messageRoutes(app, services.messages, services.outgoing);
  threadRoutes(app, services.threads, services.messages);
  draftRoutes(app, services.drafts);
  webhookRoutes(app, services.webhooks);
  scopedWebhookRoutes(app, services.webhooks);
  accessListRoutes(app, services.accessLists);
  usageRoutes(app, services.usage);
  inboxEventRoutes(app, services.inboxEvents);
  apiKeyRoutes(app, services.apiKeys);
  agentRoutes(app, services.agent);
  podRoutes(app, { pods: services.pods });
  podInboxRoutes(app, { inboxes: services.inboxes, requirePod: services.pods.requirePod });
  podThreadRoutes(app, {
    threads: services.threads,
    messages: services.messages,
    requirePod: services.pods.requirePod,
  });
  domainRoutes(app, services.domains, config.publicUrl);
  searchRoutes(app, services.search);
  consoleRoutes(app, services.consoleSessions, config.consoleDir !== undefined ? { directory: config.consoleDir } : {});
  mcpRoutes(app, {
    apiKeys: services.apiKeys,
    limiter: services.limiter,
    services: { ...services, waiters: ops.waiters },
  });

  app.get('/v0/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
  app.get('/v0/docs', { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
    reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', SWAGGER_UI_CSP)
      .send(
        swaggerUiHtml({
          title: 'Inbox Messaging Service API',
          openApiUrl: '/v0/openapi.json',
          assetsPath: '/v0/docs/ui',
        }),
      ),
  );
  app.get('/v0/docs/ui/:asset', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    const asset = swaggerUiAsset((request.params as { asset: string }).asset);
    if (!asset) throw new NotFoundError('No such asset.');
    return reply
      .header('content-type', asset.contentType)
      .header('cache-control', 'public, max-age=86400')
      .send(asset.body);
  });
  return app;
}
