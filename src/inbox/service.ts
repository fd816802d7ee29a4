import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { Redis } from 'ioredis';
import { systemClock, type Clock } from '../platform/clock.js';
import { openDatabase, type Database } from '../platform/db/database.js';
import { migrateToLatest } from '../platform/db/migrate.js';
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
import { createThreadService } from './threads/thread.service.js';
import { webhookDeliveryQueue } from './webhooks/webhook-delivery.worker.js';
import { createWebhookClient } from './webhooks/webhook.client.js';
import { createWebhookService } from './webhooks/webhook.service.js';

export async function openInboxDatabase(config: InboxConfig): Promise<Database<InboxDatabase>> {
  // FULL: a message the API or SMTP acknowledged survives power loss, not only a process crash.
  return openDatabase<InboxDatabase>({ url: config.databaseUrl, dataDir: config.dataDir, defaultFile: 'inbox.db', poolSize: config.databasePoolSize, sqliteSynchronous: 'FULL' });
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
      sendLimitPerDay: config.sendLimitPerDay,
      relayConfigured: config.smtpRelayUrl !== undefined,
      publicUrl: config.publicUrl,
      downloadTtlSeconds: config.downloadUrlTtlSeconds,
      notifyJobs: () => runner.notify(),
    }),
    threads: createThreadService({ db }),
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
  readonly database: Database<InboxDatabase>;
  readonly runtime: InboxRuntime;
  close(): Promise<void>;
}

/** Opens and migrates the database, then starts the roles of INBOX_ROLES (api, worker). */
export async function startInboxService(config: InboxConfig, options: { clock?: Clock; ids?: Ids } = {}): Promise<RunningInboxService> {
  const database = await openInboxDatabase(config);
  try {
    await migrateInbox(database);
    let app: FastifyInstance | undefined;
    const log = { warn: (o: object, m: string) => app?.log.warn(o, m), error: (o: object, m: string) => app?.log.error(o, m) };
    const runtime = createInboxServices(config, database.db, { ...options, log });
    let url: string | undefined;
    if (config.roles.includes('api')) {
      app = (await buildInboxApp(runtime.services, database)) as unknown as FastifyInstance;
      url = await app.listen({ host: config.host, port: config.port });
    }
    if (config.roles.includes('worker')) runtime.runner.start();
    return {
      app,
      url,
      database,
      runtime,
      async close() {
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
