import { createSendService } from './outgoing/send.service.js';
import { createLabelsService } from './mailstore/labels.service.js';
import { createRemovalService } from './mailstore/removal.service.js';
import { createFolderProjection, type FoldersChanged } from './mailstore/folders.js';
import { FOLDERS_TOPIC, packInboxIds, unpackInboxIds } from './imap/folder-signal.js';
import { createImapService } from './imap/imap.service.js';
import { startImapServer, type RunningImapServer } from './imap/imap.server.js';
import { loginToInbox } from './inboxes/inbox-login.js';
import { startSubmissionServer } from './smtp/submission.server.js';
import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Registry } from 'prom-client';
import { pino, type Logger } from 'pino';
import { systemClock, type Clock } from '../platform/clock.js';
import { closeInOrder } from '../platform/close-in-order.js';
import type { Database } from '../platform/db/database.js';
import type { Dialect } from '../platform/db/types.js';
import { commitsOf } from '../platform/db/group-commit.js';
import { loggerOptions } from '../platform/log/logger.js';
import { buildManagementApp, metricsExposure, newMetricsRegistry, type Readiness } from '../platform/http/app.js';
import { memoryRateLimiter, sharedRateLimiter } from '../platform/http/rate-limit.js';
import { loginBudget, type LoginBudget } from '../platform/login-budget.js';
import { connectRedis, type SharedRedis } from '../platform/redis.js';
import { systemIds, type Ids } from '../platform/ids.js';
import { createJobRunner, type JobRunner, type JobWakeups, type QueueDefinition } from '../platform/jobs/jobs.js';
import { createAccessListService, createListScreen } from './access-lists/access-list.service.js';
import { createApiKeyService } from './api-keys/api-key.service.js';
import { SIGN_IN_FAILURE_WINDOW_MS, createConsoleSessions } from './console/console-session.service.js';
import { createInboxEventService } from './events/inbox-event.service.js';
import { createUsageService } from './usage/usage.service.js';
import { inboxLifecycle } from './usage/usage-counts.js';
import { deleteEntriesOfScope, scopeKeyOf } from './access-lists/access-list.repository.js';
import { createPodService } from './pods/pod.service.js';
import { createAgentService } from './agent/agent.service.js';
import { buildInboxApp, type InboxServices } from './app.js';
import { type InboxConfig } from './inbox.config.js';
import { sendInboxError } from './http/error-envelope.js';
import type { Db, InboxDatabase } from './schema/database.js';
import { createDelivery } from './mailstore/delivery.service.js';
import { createBlobSweeper } from './mailstore/message-blobs.js';
import { draftSendQueue } from './drafts/draft-send.worker.js';
import { DRAFT_SEND_QUEUE, WEBHOOK_DELIVERY_QUEUE, OUTBOUND_MAIL_QUEUE } from './core/queues.js';
import { findDraftAttachmentContent } from './drafts/draft.repository.js';
import { createDraftService } from './drafts/draft.service.js';
import { createEventService, type PublishEvents } from './events/event.service.js';
import { createInboxService } from './inboxes/inbox.service.js';
import { createDomains } from './domains/domain-assembly.js';
import { createMessageService } from './messages/message.service.js';
import { createSearchService } from './search/search.service.js';
import { migrateInbox, openInboxDatabase } from './open-database.js';
import { createOutboundMail } from './outbound/outbound.worker.js';
import { createAuthVerifier, createDnsResolver, type DnsResolver } from './smtp/auth-results.js';
import { createInboundService } from './smtp/inbound.service.js';
import { startSmtpServer, type RunningSmtpServer } from './smtp/smtp.server.js';
import { createThreadService } from './threads/thread.service.js';
import { createEventFeed, type EventFeed } from './realtime/event-feed.js';
import { createMessageWaiters } from './mcp/message-waiters.js';
import { attachRealtime, type RealtimeServer } from './realtime/websocket.server.js';
import { webhookDeliveryQueue } from './webhooks/webhook-delivery.worker.js';
import { createWebhookClient } from './webhooks/webhook.client.js';
import { createWebhookService } from './webhooks/webhook.service.js';

export { migrateInbox, openInboxDatabase };

/**
 * How often a worker sweeps blobs: the bytes of deleted messages leave the database within about
 * this long (a sweep deletes at most 50 blobs of each kind; the next takes the rest).
 */
export const BLOB_SWEEP_MS = 60_000;

/** The wake-up signal of the inbox's job runners. */
const JOBS_TOPIC = 'inbox_jobs';
/** A key was deleted or its permissions changed (payload: its id): WebSockets holding it end on every instance. */
const KEYS_TOPIC = 'inbox_api_keys';

export interface InboxRuntime {
  readonly services: InboxServices;
  /** The mail store's label and removal services, for doors that are not HTTP (IMAP). */
  readonly labels: ReturnType<typeof createLabelsService>;
  readonly removal: ReturnType<typeof createRemovalService>;
  readonly runner: JobRunner;
  /** Deletes blobs nothing needs any more (message-blobs.ts `createBlobSweeper`): the worker role runs it every BLOB_SWEEP_MS. */
  sweepBlobs(): Promise<number>;
  /** Closes the SMTP relay's pooled connections; after the runner has stopped. */
  closeOutbound(): void;
  /** Failed logins of IMAP and SMTP submission, one budget for both (through Redis when set). */
  readonly logins: LoginBudget;
}

/** Creates every service of the inbox domain over one database: used by HTTP, workers and the CLI. */
export function createInboxServices(
  config: InboxConfig,
  db: Kysely<InboxDatabase>,
  options: {
    clock?: Clock;
    ids?: Ids;
    redis?: SharedRedis;
    registry?: Registry;
    wakeups?: JobWakeups;
    jobPollMs?: number;
    publishEvents?: PublishEvents;
    keyChanged?: (trx: Db, apiKeyId: string) => Promise<void>;
    /** Announces changed folders of mail clients in the writer's transaction (imap/folder-signal.ts). */
    foldersChanged?: FoldersChanged;
    log: { warn(o: object, m: string): void; error(o: object, m: string): void };
  },
): InboxRuntime {
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? systemIds;
  // Shared through Redis when configured (per process while it is down), else per process.
  const limiter = options.redis
    ? sharedRateLimiter(
        options.redis,
        config.rateLimitPerMinute,
        'inbox:rl',
        options.registry ? { registry: options.registry } : {},
      )
    : memoryRateLimiter(config.rateLimitPerMinute);
  const events = createEventService({
    clock,
    ids,
    ...(options.publishEvents ? { publish: options.publishEvents } : {}),
  });
  // One commit batcher per database, shared by every writer (created with the Kysely instance).
  const commits = commitsOf(db);
  const search = createSearchService({ db });
  // The folders of mail clients (IMAP), kept by every write of stored mail (decision 0045).
  const folders = createFolderProjection(options.foldersChanged ? { changed: options.foldersChanged } : {});
  const delivery = createDelivery({
    folders,
    commits,
    clock,
    ids,
    events,
    sendLimitPerDay: config.sendLimitPerDay,
    lists: createListScreen(),
    storeHooks: [search.indexHook],
    notifyJobs: () => runner.notify(),
  });
  const domains = createDomains(config, { db, commits, clock, ids });
  // The one path of every label change and every removal of stored mail, whichever door asks.
  const labels = createLabelsService({ recordLabelChanges: events.recordLabelChanges, folders });
  const removal = createRemovalService({ clock, labels, threadChanged: [search.rebuildThread], folders });
  const inboxes = createInboxService({
    db,
    clock,
    ids,
    domains: config.domains,
    customDomain: domains.inboxDomain,
    lifecycle: inboxLifecycle({
      commits,
      clock,
      dropLists: (trx, inbox) =>
        deleteEntriesOfScope(
          trx,
          inbox.organizationId,
          scopeKeyOf({ kind: 'inbox', podId: inbox.podId, inboxId: inbox.inboxId }),
        ),
    }),
  });
  // The rules of an outgoing message, for sends and drafts alike.
  const rules = {
    localDomains: inboxes.localDomains,
    maxRecipients: config.maxRecipients,
    maxAttachmentBytes: config.maxAttachmentBytes,
    maxBodyBytes: config.maxBodyBytes,
    relayConfigured: config.smtpRelayUrl !== undefined,
    attachmentUrls: {
      allowPrivate: config.webhookAllowPrivate,
      timeoutMs: config.attachmentUrlTimeoutMs,
      maxBytes: config.attachmentUrlMaxBytes,
    },
  };
  const outgoing = createSendService({
    db,
    delivery,
    clock,
    ids,
    ...rules,
    servedDomain: domains.servedDomain,
  });
  const messages = createMessageService({
    db,
    commits,
    clock,
    ids,
    labels,
    removal,
    findDraftAttachmentContent,
    publicUrl: config.publicUrl,
    downloadTtlSeconds: config.downloadUrlTtlSeconds,
  });
  const drafts = createDraftService({
    db,
    commits,
    clock,
    ids,
    messages,
    outgoing,
    ...rules,
    notifyJobs: () => runner.notify(),
    folders,
  });
  const apiKeys = createApiKeyService({
    db,
    commits,
    clock,
    ids,
    ...(options.keyChanged ? { keyChanged: options.keyChanged } : {}),
  });
  const services: InboxServices = {
    config,
    db,
    clock,
    ids,
    limiter,
    events,
    apiKeys,
    consoleSessions: createConsoleSessions({
      db,
      clock,
      ids,
      authenticateKey: (key) => apiKeys.authenticate(key),
      ttlHours: config.consoleSessionHours,
      failures: options.redis
        ? sharedRateLimiter(options.redis, config.consoleSignInFailures, 'inbox:console-signin', {
            windowMs: SIGN_IN_FAILURE_WINDOW_MS,
          })
        : memoryRateLimiter(config.consoleSignInFailures, SIGN_IN_FAILURE_WINDOW_MS),
    }),
    pods: createPodService({ db, commits, clock, ids }),
    inboxes,
    domains,
    commits,
    delivery,
    messages,
    outgoing,
    drafts,
    agent: createAgentService({
      db,
      commits,
      clock,
      ids,
      enabled: config.agentSignup,
      domain: inboxes.localDomains[0] as string,
      senderUsername: config.agentSignupSender,
      limiter: options.redis
        ? sharedRateLimiter(options.redis, config.agentSignupPerHour, 'inbox:signup', { windowMs: 3600e3 })
        : memoryRateLimiter(config.agentSignupPerHour, 3600e3),
      outgoing,
    }),
    threads: createThreadService({ db, commits, clock, labels, removal }),
    search,
    webhooks: createWebhookService({
      db,
      commits,
      clock,
      ids,
      allowPrivateUrls: config.webhookAllowPrivate,
      events,
      notifyJobs: () => runner.notify(),
    }),
    accessLists: createAccessListService({ db, commits, clock }),
    usage: createUsageService({ db, clock }),
    inboxEvents: createInboxEventService({ db }),
  };
  const queues: Record<string, QueueDefinition<never>> = {};
  queues[DRAFT_SEND_QUEUE] = draftSendQueue(drafts);
  const webhookClient = createWebhookClient({
    timeoutMs: config.webhookTimeoutMs,
    allowPrivate: config.webhookAllowPrivate,
  });
  queues[WEBHOOK_DELIVERY_QUEUE] = webhookDeliveryQueue({ db, clock, client: webhookClient, log: options.log });
  // Checks the relay and DKIM settings in every role: a bad one stops the process at boot.
  const outbound = createOutboundMail(config, {
    db,
    commits,
    clock,
    events,
    log: options.log,
    notifyJobs: () => runner.notify(),
    domainKeys: domains.signingKey,
  });
  queues[OUTBOUND_MAIL_QUEUE] = outbound.queue;
  const blobSweeper = createBlobSweeper(commits, clock);
  const runner = createJobRunner({
    db,
    clock,
    queues,
    log: options.log,
    ...(options.wakeups ? { wakeups: options.wakeups } : {}),
    ...(options.jobPollMs ? { pollMs: options.jobPollMs } : {}),
  });
  return {
    services,
    labels,
    removal,
    runner,
    sweepBlobs: blobSweeper.sweep,
    closeOutbound: () => outbound.close(),
    logins: loginBudget(config.imapLoginFailures, options.redis ? { redis: options.redis } : {}),
  };
}

export interface RunningInboxService {
  readonly app: FastifyInstance | undefined;
  readonly url: string | undefined;
  /** The management listener (`/healthz`, `/readyz`, `/metrics`), when the process has one. */
  readonly managementUrl: string | undefined;
  /** The inbound SMTP listener (role `smtp`). */
  readonly smtp: { readonly host: string; readonly port: number } | undefined;
  readonly database: Database<InboxDatabase>;
  readonly runtime: InboxRuntime;
  /** Real-time events over WebSocket on the API's port (role `api`). */
  readonly realtime: RealtimeServer | undefined;
  /** The IMAP listeners (role `imap`): STARTTLS, and implicit TLS when a certificate is set. */
  readonly imap: { readonly host: string; readonly port: number; readonly tlsPort: number | undefined } | undefined;
  /** The SMTP submission listeners (role `submission`): STARTTLS, and implicit TLS when a certificate is set. */
  readonly submission:
    { readonly host: string; readonly port: number; readonly tlsPort: number | undefined } | undefined;
  close(): Promise<void>;
}

/** The `smtp` role: the inbound SMTP listener over the same services as the API. */
function startInboundSmtp(
  config: InboxConfig,
  runtime: InboxRuntime,
  dnsResolver: DnsResolver | undefined,
): Promise<RunningSmtpServer> {
  const { services } = runtime;
  const hostname = config.smtpHostname ?? os.hostname();
  const resolver = dnsResolver ?? createDnsResolver(config.smtpDnsServers, config.smtpAuthTimeoutMs);
  const inbound = createInboundService({
    db: services.db,
    delivery: services.delivery,
    clock: services.clock,
    ids: services.ids,
    events: services.events,
    localDomains: services.inboxes.localDomains,
    servedDomain: services.domains.servedDomain,
    hostname,
    verifier: config.smtpVerifyAuth ? createAuthVerifier({ resolver, timeoutMs: config.smtpAuthTimeoutMs }) : undefined,
  });
  const listener = {
    host: config.smtpHost ?? config.host,
    port: config.smtpPort,
    hostname,
    tlsKey: config.smtpTlsKey,
    tlsCert: config.smtpTlsCert,
    maxMessageBytes: config.smtpMaxMessageBytes,
    maxRecipients: config.smtpMaxRecipients,
    maxConnections: config.smtpMaxConnections,
    maxConnectionsPerIp: config.smtpMaxConnectionsPerIp,
    maxMessagesPerConnection: config.smtpMaxMessagesPerConnection,
    greetingDelayMs: config.smtpGreetingDelayMs,
    maxBufferedBytes: config.smtpMaxBufferedBytes,
    dataTimeoutMs: config.smtpDataTimeoutMs,
  };
  return startSmtpServer(listener, inbound, pino(loggerOptions(config.logLevel, 'inbox-smtp')));
}

/** The `imap` role: IMAP for mail clients over the same services as the API (decision 0045). */
async function startImap(
  config: InboxConfig,
  runtime: InboxRuntime,
  database: Database<InboxDatabase>,
): Promise<{ server: RunningImapServer; stop: () => Promise<void> }> {
  const { services } = runtime;
  const imap = createImapService({
    db: services.db,
    commits: services.commits,
    clock: services.clock,
    apiKeys: services.apiKeys,
    labels: runtime.labels,
    removal: runtime.removal,
    search: services.search,
    drafts: services.drafts,
  });
  const server = await startImapServer(
    {
      host: config.imapHost ?? config.host,
      port: config.imapPort,
      tlsPort: config.imapsPort,
      tlsKey: config.smtpTlsKey,
      tlsCert: config.smtpTlsCert,
      allowPlaintextLoopback: config.imapAllowPlaintextLoopback,
      maxConnections: config.imapMaxConnections,
      maxConnectionsPerIp: config.imapMaxConnectionsPerIp,
      maxConnectionsPerKey: config.imapMaxConnectionsPerKey,
      idleTimeoutMs: config.imapIdleTimeoutMs,
      writeTimeoutMs: config.imapWriteTimeoutMs,
      logins: runtime.logins,
    },
    imap,
    pino(loggerOptions(config.logLevel, 'inbox-imap')),
  );
  // Changes committed by any process on the database (every instance on PostgreSQL).
  const stopFolders = await database.listen(FOLDERS_TOPIC, (payload) => {
    if (payload) server.foldersChanged(unpackInboxIds(payload));
  });
  const stopKeys = await database.listen(KEYS_TOPIC, (apiKeyId) => {
    if (apiKeyId) server.dropKey(apiKeyId);
  });
  return {
    server,
    async stop() {
      await stopFolders();
      await stopKeys();
      await server.close();
    },
  };
}

/** The `submission` role: SMTP submission for mail clients, sent as API sends are (decision 0045). */
async function startSubmission(config: InboxConfig, runtime: InboxRuntime, database: Database<InboxDatabase>) {
  const { services } = runtime;
  const server = await startSubmissionServer(
    {
      host: config.smtpHost ?? config.host,
      port: config.submissionPort,
      tlsPort: config.submissionsPort,
      hostname: config.smtpHostname ?? os.hostname(),
      tlsKey: config.smtpTlsKey,
      tlsCert: config.smtpTlsCert,
      allowPlaintextLoopback: config.submissionAllowPlaintextLoopback,
      maxMessageBytes: config.submissionMaxMessageBytes,
      maxRecipients: config.maxRecipients,
      maxSessionMs: config.submissionMaxSessionMs,
      maxConnections: config.smtpMaxConnections,
      logins: runtime.logins,
    },
    {
      login: (address, key) => loginToInbox(services.db, services.apiKeys, address, key, 'messageSend'),
      submit: (owner, inboxId, message) => services.outgoing.submit(owner, inboxId, message),
    },
    pino(loggerOptions(config.logLevel, 'inbox-submission')),
  );
  const stopKeys = await database.listen(KEYS_TOPIC, (apiKeyId) => {
    if (apiKeyId) server.dropKey(apiKeyId);
  });
  return {
    server,
    async stop() {
      await stopKeys();
      await server.close();
    },
  };
}

/**
 * Opens and migrates the database, then starts the roles of INBOX_ROLES (api, worker, smtp, imap, submission).
 * `dnsResolver` replaces DNS for SPF/DKIM/DMARC (tests).
 */
export async function startInboxService(
  config: InboxConfig,
  options: { clock?: Clock; ids?: Ids; dnsResolver?: DnsResolver; jobPollMs?: number; blobSweepMs?: number } = {},
): Promise<RunningInboxService> {
  const database = await openInboxDatabase(config);
  let redis: SharedRedis | undefined;
  let feed: EventFeed | undefined;
  let stopKeyWatch: (() => Promise<void>) | undefined;
  try {
    await migrateInbox(database);
    let app: FastifyInstance | undefined;
    // Workers log through the API's logger when the process has one, else through their own.
    let own: Logger | undefined;
    const logger = () => app?.log ?? (own ??= pino(loggerOptions(config.logLevel, 'inbox-worker')));
    const log = {
      info: (o: object, m: string) => logger().info(o, m),
      warn: (o: object, m: string) => logger().warn(o, m),
      error: (o: object, m: string) => logger().error(o, m),
    };
    const registry = newMetricsRegistry();
    if (config.redisUrl) {
      redis = connectRedis({ url: config.redisUrl, log, registry });
      await redis.connected();
    }
    const shared = redis;
    const ready = async (): Promise<Readiness> => {
      await database.ping();
      return shared ? { database: 'ok', redis: shared.state() === 'ok' ? 'ok' : 'degraded' } : { database: 'ok' };
    };
    // Work enqueued by any process (an smtp-only one, say) wakes the workers of every process.
    const wakeups: JobWakeups = {
      notify: () => database.notify(JOBS_TOPIC),
      listen: (onWake) => database.listen(JOBS_TOPIC, onWake),
    };
    // Events are announced in their writers' transactions by every role; the API role pushes them to WebSocket clients.
    feed = createEventFeed(database, log);
    const runtime = createInboxServices(config, database.db, {
      ...options,
      log,
      registry,
      wakeups,
      publishEvents: feed.publish,
      keyChanged: (trx, apiKeyId) => database.notifyIn(trx, KEYS_TOPIC, apiKeyId),
      foldersChanged: async (trx, inboxIds) => {
        for (const payload of packInboxIds(inboxIds)) await database.notifyIn(trx, FOLDERS_TOPIC, payload);
      },
      ...(redis ? { redis } : {}),
    });
    const hasApi = config.roles.includes('api');
    // A process without the API still answers health checks and serves metrics, on INBOX_PORT.
    const managementPort = config.managementPort ?? (hasApi ? undefined : config.port);
    let url: string | undefined;
    let realtime: RealtimeServer | undefined;
    if (hasApi) {
      app = (await buildInboxApp(runtime.services, database, {
        registry,
        ready,
        metrics: metricsExposure(config.metricsToken, 'api', managementPort !== undefined),
        waiters: createMessageWaiters(feed, registry),
      })) as unknown as FastifyInstance;
      const { services } = runtime;
      const ws = attachRealtime(
        app.server,
        {
          db: services.db,
          apiKeys: services.apiKeys,
          sessions: services.consoleSessions,
          limiter: services.limiter,
          feed,
          log,
          registry,
        },
        {
          maxConnections: config.wsMaxConnections,
          maxConnectionsPerKey: config.wsMaxConnectionsPerKey,
          pingIntervalMs: config.wsPingIntervalMs,
          idleTimeoutMs: Math.max(config.wsIdleTimeoutMs, config.wsPingIntervalMs),
          maxBufferedBytes: config.wsMaxBufferedBytes,
        },
      );
      realtime = ws;
      stopKeyWatch = await database.listen(KEYS_TOPIC, (apiKeyId) => {
        if (apiKeyId) ws.dropKey(apiKeyId);
        else
          log.warn(
            {},
            'realtime: the key-change signal was interrupted; WebSockets of keys deleted meanwhile close at the next heartbeat, those of keys whose permissions changed when they reconnect',
          );
      });
      // Before the HTTP server closes: it would otherwise wait for the upgraded sockets.
      app.addHook('preClose', async () => ws.close());
      url = await app.listen({ host: config.host, port: config.port });
    }
    let management: FastifyInstance | undefined;
    let managementUrl: string | undefined;
    let smtp: RunningSmtpServer | undefined;
    let imap: Awaited<ReturnType<typeof startImap>> | undefined;
    let submission: Awaited<ReturnType<typeof startSubmission>> | undefined;
    let sweeper: NodeJS.Timeout | undefined;
    /** The sweep under way: close waits for it before the database closes. */
    let sweeping: Promise<unknown> | undefined;
    try {
      if (managementPort !== undefined) {
        management = buildManagementApp({
          name: 'inbox',
          logLevel: config.logLevel,
          registry,
          ready,
          metrics: metricsExposure(config.metricsToken, 'management', true),
          renderError: (err, request, reply) => sendInboxError(request, reply, err),
        });
        managementUrl = await management.listen({ host: config.host, port: managementPort });
      }
      if (config.roles.includes('worker')) {
        runtime.runner.start();
        sweeper = setInterval(() => {
          sweeping ??= runtime
            .sweepBlobs()
            .catch((err: unknown) => log.warn({ err }, 'blob sweep failed; the next one tries again'))
            .finally(() => (sweeping = undefined));
        }, options.blobSweepMs ?? BLOB_SWEEP_MS).unref();
      }
      if (config.roles.includes('smtp')) smtp = await startInboundSmtp(config, runtime, options.dnsResolver);
      if (config.roles.includes('imap')) imap = await startImap(config, runtime, database);
      if (config.roles.includes('submission')) submission = await startSubmission(config, runtime, database);
    } catch (err) {
      clearInterval(sweeper);
      await smtp?.close();
      await imap?.stop();
      await app?.close();
      await management?.close();
      await runtime.runner.stop();
      throw err;
    }
    for (const w of perProcessStateWarnings(config, database.dialect)) log.warn(w.fields, w.message);
    return {
      app,
      url,
      managementUrl,
      smtp: smtp ? { host: smtp.host, port: smtp.port } : undefined,
      database,
      runtime,
      realtime,
      imap: imap ? { host: imap.server.host, port: imap.server.port, tlsPort: imap.server.tlsPort } : undefined,
      submission: submission
        ? { host: submission.server.host, port: submission.server.port, tlsPort: submission.server.tlsPort }
        : undefined,
      async close() {
        clearInterval(sweeper);
        await closeInOrder(
          [
            // SMTP first: messages in flight still need the database to commit.
            ['smtp', () => smtp?.close()],
            ['submission', () => submission?.stop()],
            ['imap', () => imap?.stop()],
            // Closes the WebSocket clients (1001) before the HTTP server.
            ['http', () => app?.close()],
            ['key watch', () => stopKeyWatch?.()],
            ['event feed', () => feed?.close()],
            ['management', () => management?.close()],
            ['blob sweep', () => sweeping],
            ['job runner', () => runtime.runner.stop()],
            ['outbound', () => runtime.closeOutbound()],
            ['rate limiter', () => runtime.services.limiter.close()],
            ['database', () => database.destroy()],
          ],
          (step, waitedMs) => log.warn({ step, waitedMs }, `closing: ${step} has not closed after ${waitedMs} ms`),
        );
      },
    };
  } catch (err) {
    await stopKeyWatch?.();
    await feed?.close();
    await redis?.close();
    await database.destroy();
    throw err;
  }
}

/**
 * What a process says at start about the limits it keeps to itself where other processes may share
 * the data: each then enforces its own (docs/deploy.md, "Shared and per-process state").
 */
export function perProcessStateWarnings(config: InboxConfig, dialect: Dialect): { fields: object; message: string }[] {
  const warnings: { fields: object; message: string }[] = [];
  if (dialect === 'postgres' && config.roles.includes('api') && !config.redisUrl) {
    warnings.push({
      fields: { setting: 'INBOX_RATE_LIMIT_PER_MINUTE', limit: config.rateLimitPerMinute },
      message:
        'no REDIS_URL on a shared PostgreSQL database: the API rate limit is counted per process, so N instances together allow N times the limit',
    });
  }
  if (dialect === 'sqlite' && !['api', 'worker', 'smtp'].every((role) => config.roles.includes(role))) {
    warnings.push({
      fields: { roles: config.roles },
      message:
        'roles split across processes on SQLite: SQLite serves one process; jobs enqueued by another process are noticed only at the next poll, and writers wait for each other',
    });
  }
  return warnings;
}
