import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { systemClock, type Clock } from '../platform/clock.js';
import { openDatabase, type Database } from '../platform/db/database.js';
import { migrateToLatest } from '../platform/db/migrate.js';
import { loggerOptions } from '../platform/log/logger.js';
import { memoryRateLimiter, redisRateLimiter, type RateLimiter } from '../platform/http/rate-limit.js';
import { systemIds, type Ids } from '../platform/ids.js';
import { createJobRunner, type JobRunner, type QueueDefinition } from '../platform/jobs/jobs.js';
import { createApiKeyService } from './api-keys/api-key.service.js';
import { buildInboxApp, type InboxConfig, type InboxServices } from './app.js';
import type { InboxDatabase } from './database.js';
import { createEventService, WEBHOOK_DELIVERY_QUEUE } from './events/event.service.js';
import { createInboxService } from './inboxes/inbox.service.js';
import { createMessageService, OUTBOUND_MAIL_QUEUE } from './messages/message.service.js';
import { INBOX_MIGRATION_TABLE, inboxMigrations } from './migrations/index.js';
import { createOutboundMail } from './outbound/outbound.worker.js';
import { createAuthVerifier, createDnsResolver, type DnsResolver } from './smtp/auth-results.js';
import { createInboundService } from './smtp/inbound.service.js';
import { startSmtpServer, type RunningSmtpServer } from './smtp/smtp.server.js';
import { createThreadService } from './threads/thread.service.js';
import { webhookDeliveryQueue } from './webhooks/webhook-delivery.worker.js';
import { createWebhookClient } from './webhooks/webhook.client.js';
import { createWebhookService } from './webhooks/webhook.service.js';

export async function openInboxDatabase(config: InboxConfig): Promise<Database<InboxDatabase>> {
  // FULL: a message the API or SMTP acknowledged survives power loss, not only a process crash.
  return openDatabase<InboxDatabase>({ url: config.databaseUrl, dataDir: config.dataDir, defaultFile: 'inbox.db', poolSize: config.databasePoolSize, sqliteSynchronous: 'FULL', verifyStatementCache: config.verifyStatementCache });
}

export async function migrateInbox(database: Database<InboxDatabase>): Promise<string[]> {
  return migrateToLatest(database.db, inboxMigrations, INBOX_MIGRATION_TABLE);
}

export interface InboxRuntime {
  readonly services: InboxServices;
  readonly runner: JobRunner;
  /** Closes the SMTP relay's pooled connections; after the runner has stopped. */
  closeOutbound(): void;
}

/** Creates every service of the inbox domain over one database: used by HTTP, workers and the CLI. */
export function createInboxServices(config: InboxConfig, db: Kysely<InboxDatabase>, options: { clock?: Clock; ids?: Ids; limiter?: RateLimiter; log: { warn(o: object, m: string): void; error(o: object, m: string): void } }): InboxRuntime {
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? systemIds;
  const limiter = options.limiter ?? (config.redisUrl ? redisRateLimiter(new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }), config.rateLimitPerMinute, 'inbox:rl') : memoryRateLimiter(config.rateLimitPerMinute));
  const events = createEventService({ clock, ids });
  const inboxes = createInboxService({ db, clock, ids, domains: config.domains });
  const services: InboxServices = {
    config,
    db,
    clock,
    ids,
    limiter,
    events,
    apiKeys: createApiKeyService({ db, clock, ids }),
    inboxes,
    messages: createMessageService({
      db,
      clock,
      ids,
      events,
      localDomains: inboxes.localDomains,
      maxRecipients: config.maxRecipients,
      maxAttachmentBytes: config.maxAttachmentBytes,
      maxBodyBytes: config.maxBodyBytes,
      sendLimitPerDay: config.sendLimitPerDay,
      relayConfigured: config.smtpRelayUrl !== undefined,
      publicUrl: config.publicUrl,
      downloadTtlSeconds: config.downloadUrlTtlSeconds,
      notifyJobs: () => runner.notify(),
    }),
    threads: createThreadService({ db, clock }),
    webhooks: createWebhookService({ db, clock, ids, allowPrivateUrls: config.webhookAllowPrivate }),
  };
  const queues: Record<string, QueueDefinition<never>> = {};
  const webhookClient = createWebhookClient({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate });
  queues[WEBHOOK_DELIVERY_QUEUE] = webhookDeliveryQueue({ db, clock, client: webhookClient, timeoutMs: config.webhookTimeoutMs, log: options.log });
  // Checks the relay and DKIM settings in every role: a bad one stops the process at boot.
  const outbound = createOutboundMail(config, { db, clock, events, log: options.log, notifyJobs: () => runner.notify() });
  queues[OUTBOUND_MAIL_QUEUE] = outbound.queue;
  const runner = createJobRunner({ db, clock, queues, log: options.log });
  return { services, runner, closeOutbound: () => outbound.close() };
}

export interface RunningInboxService {
  readonly app: FastifyInstance | undefined;
  readonly url: string | undefined;
  /** The inbound SMTP listener (role `smtp`). */
  readonly smtp: { readonly host: string; readonly port: number } | undefined;
  readonly database: Database<InboxDatabase>;
  readonly runtime: InboxRuntime;
  close(): Promise<void>;
}

/** The `smtp` role: the inbound SMTP listener over the same services as the API. */
function startInboundSmtp(config: InboxConfig, runtime: InboxRuntime, dnsResolver: DnsResolver | undefined): Promise<RunningSmtpServer> {
  const { services } = runtime;
  const hostname = config.smtpHostname ?? os.hostname();
  const resolver = dnsResolver ?? createDnsResolver(config.smtpDnsServers, config.smtpAuthTimeoutMs);
  const inbound = createInboundService({
    db: services.db,
    clock: services.clock,
    ids: services.ids,
    events: services.events,
    localDomains: services.inboxes.localDomains,
    hostname,
    verifier: config.smtpVerifyAuth ? createAuthVerifier({ resolver, timeoutMs: config.smtpAuthTimeoutMs }) : undefined,
    notifyJobs: () => runtime.runner.notify(),
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

/**
 * Opens and migrates the database, then starts the roles of INBOX_ROLES (api, worker, smtp).
 * `dnsResolver` replaces DNS for SPF/DKIM/DMARC (tests).
 */
export async function startInboxService(config: InboxConfig, options: { clock?: Clock; ids?: Ids; dnsResolver?: DnsResolver } = {}): Promise<RunningInboxService> {
  const database = await openInboxDatabase(config);
  try {
    await migrateInbox(database);
    let app: FastifyInstance | undefined;
    // Workers log through the API's logger when the process has one, else through their own.
    let own: { warn(o: object, m: string): void; error(o: object, m: string): void } | undefined;
    const logger = () => app?.log ?? (own ??= pino(loggerOptions(config.logLevel, 'inbox-worker')));
    const log = { warn: (o: object, m: string) => logger().warn(o, m), error: (o: object, m: string) => logger().error(o, m) };
    const runtime = createInboxServices(config, database.db, { ...options, log });
    let url: string | undefined;
    if (config.roles.includes('api')) {
      app = (await buildInboxApp(runtime.services, database)) as unknown as FastifyInstance;
      url = await app.listen({ host: config.host, port: config.port });
    }
    if (config.roles.includes('worker')) runtime.runner.start();
    let smtp: RunningSmtpServer | undefined;
    try {
      if (config.roles.includes('smtp')) smtp = await startInboundSmtp(config, runtime, options.dnsResolver);
    } catch (err) {
      await app?.close();
      await runtime.runner.stop();
      throw err;
    }
    return {
      app,
      url,
      smtp: smtp ? { host: smtp.host, port: smtp.port } : undefined,
      database,
      runtime,
      async close() {
        // SMTP first: messages in flight still need the database to commit.
        await smtp?.close();
        await app?.close();
        await runtime.runner.stop();
        runtime.closeOutbound();
        await runtime.services.limiter.close();
        await database.destroy();
      },
    };
  } catch (err) {
    await database.destroy();
    throw err;
  }
}
