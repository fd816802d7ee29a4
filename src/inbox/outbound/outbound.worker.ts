import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { ConfigError } from '../../platform/config/config.js';
import { enqueue, GiveUpJob, RetryJob, type Job, type JobEnd, type QueueDefinition } from '../../platform/jobs/jobs.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import type { EventService } from '../events/event.service.js';
import type { EmitInput } from '../core/events.js';
import { OUTBOUND_MAIL_QUEUE, type OutboundMailJob } from '../core/queues.js';
import { dkimSignerFrom, withDomainKeys, type DkimConfig, type DkimSigner, type DomainKey } from './dkim.js';
import { envelopeIdFor } from './dsn.js';
import { findInboxPod, findOutboundMessage, type OutboundMessage } from './outbound.repository.js';
import {
  bouncedEvents,
  deliveredEvent,
  rejectedEvent,
  sentEvent,
  type BouncedRecipient,
  type BounceType,
} from '../core/message-events.js';
import {
  createRelayClient,
  relaySettingsFrom,
  type Refusal,
  type RelayClient,
  type RelayConfig,
  type RelayOutcome,
} from './relay.client.js';

/**
 * The `mail.outbound` queue: one job per sent message with recipients on other domains, queued
 * in the send transaction. Each attempt signs the stored source (DKIM), hands it to the relay
 * and records the outcome as events in one transaction, which also ends the job: message.sent
 * and message.delivered for what the relay took, message.bounced for what it refused for good, a
 * follow-up job for the recipients it deferred. Temporary failures are retried until the retry
 * period, counted from the first queueing, is over; then they bounce as Transient, and so do
 * failures of our own (the database) that last past it. See docs/decisions/0006.
 */

/** Pauses after attempt 1, 2, …: quick at first (a relay restarting), then every 4 hours, ±10 %. */
export const OUTBOUND_SCHEDULE_MS: readonly number[] = [
  60e3,
  5 * 60e3,
  15 * 60e3,
  30 * 60e3,
  3600e3,
  2 * 3600e3,
  4 * 3600e3,
];

const baseDelay = (attempt: number): number =>
  OUTBOUND_SCHEDULE_MS[Math.min(Math.max(attempt, 1), OUTBOUND_SCHEDULE_MS.length) - 1] as number;

export function outboundDelay(attempt: number, random: () => number = Math.random): number {
  return Math.round(baseDelay(attempt) * (1 + 0.1 * (2 * random() - 1)));
}

/** The payload: the send's job, or a follow-up for the recipients the relay deferred. */
export interface OutboundJob extends OutboundMailJob {
  /** When the message's first job was queued: the retry period runs from here. */
  readonly queued_at?: string;
  /** Attempts made by earlier jobs of the message, so that the backoff goes on where it was. */
  readonly prior_attempts?: number;
}

export interface OutboundMailWorkerDeps {
  readonly db: Kysely<InboxDatabase>;
  /** The database's commit batcher, shared with every other writer. */
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly events: EventService;
  /** Undefined when no relay is configured: jobs left from a time when one was are rejected. */
  readonly relay: RelayClient | undefined;
  readonly dkim: DkimSigner | undefined;
  /** How long temporary failures are retried, ms from the first queueing (0: bounce at the first). */
  readonly retryMs: number;
  /** Longest one send may take, waiting for a pooled connection included, before it counts as failed. */
  readonly sendDeadlineMs: number;
  readonly log: { warn(o: object, m: string): void; error(o: object, m: string): void };
  /** Wakes the job runner after a commit that queued work (webhook deliveries, a follow-up). */
  readonly notifyJobs: () => void;
  readonly random?: () => number;
}

export function outboundMailQueue(deps: OutboundMailWorkerDeps): QueueDefinition<OutboundJob> {
  return {
    // For failures the handler did not judge (the database, say); its own RetryJob gives the exact
    // time. The same schedule and period: a last try at the end, then no more (onDead bounces).
    backoff: (_attempt, job) => {
      const t = timingOf(deps, job);
      return t.expired ? undefined : t.nextAt().getTime() - t.now.getTime();
    },
    onDead: (job, error, trx) => bounceUnsent(deps, job, error, trx as Db),
    // Renewed while the relay takes its time: only a dead worker's mail is taken over, 30 s on.
    leaseMs: 30_000,
    handle: (job) => handleOutboundJob(deps, job),
  };
}

async function handleOutboundJob(deps: OutboundMailWorkerDeps, job: Job<OutboundJob>): Promise<void> {
  const { db, clock, relay, dkim, log } = deps;
  const found = await findOutboundMessage(db, job.payload.message_pk);
  if (!found) {
    // Deleted with its inbox: nobody is left to tell.
    log.warn(
      { job: job.id, message_id: job.payload.message_id },
      'outbound mail: the message is gone, nothing to send',
    );
    return;
  }
  const { message, raw } = found;
  if (!relay)
    return reject(
      deps,
      job,
      message,
      'No SMTP relay is configured (INBOX_SMTP_RELAY_URL), so mail to other domains cannot leave.',
    );
  if (!raw) return reject(deps, job, message, 'The stored source of the message is missing.');
  let wire: Buffer;
  try {
    wire = dkim ? await dkim.sign(raw, message.domain, clock.now()) : raw;
  } catch (err) {
    return reject(deps, job, message, err instanceof Error ? err.message : String(err));
  }
  const envelope = { from: message.inboxId, to: job.payload.recipients, envid: envelopeIdFor(message.messageId) };
  const outcome = await relay.send(envelope, wire, AbortSignal.timeout(deps.sendDeadlineMs));
  await record(deps, job, message, outcome);
}

/** Our own checks refuse the message: message.rejected, and the job ends. */
async function reject(
  deps: OutboundMailWorkerDeps,
  job: Job<OutboundJob>,
  message: OutboundMessage,
  reason: string,
): Promise<never> {
  const error = `rejected: ${reason}`;
  await commit(deps, job, { status: 'dead', error }, [rejectedEvent(message, reason, deps.clock.now().toISOString())]);
  throw new GiveUpJob(error);
}

interface Timing {
  readonly now: Date;
  /** Attempts of this message so far, this one included. */
  readonly attempts: number;
  /** When the first job of the message was queued. */
  readonly queuedAt: string;
  readonly expired: boolean;
  /** The next attempt: after the backoff, but not after the end of the period (a last try there). */
  readonly nextAt: () => Date;
}

function timingOf(deps: OutboundMailWorkerDeps, job: Job<OutboundJob>): Timing {
  const now = deps.clock.now();
  const attempts = (job.payload.prior_attempts ?? 0) + job.attempt;
  const queuedAt = job.payload.queued_at ?? job.createdAt;
  const deadline = Date.parse(queuedAt) + deps.retryMs;
  return {
    now,
    attempts,
    queuedAt,
    expired: now.getTime() >= deadline,
    nextAt: () =>
      new Date(Math.max(now.getTime(), Math.min(now.getTime() + outboundDelay(attempts, deps.random), deadline))),
  };
}

const bounced = (r: Refusal): BouncedRecipient => ({ address: r.address, status: r.status, diagnostic: r.diagnostic });

async function record(
  deps: OutboundMailWorkerDeps,
  job: Job<OutboundJob>,
  message: OutboundMessage,
  outcome: RelayOutcome,
): Promise<void> {
  const t = timingOf(deps, job);
  const timestamp = t.now.toISOString();
  const recipients = job.payload.recipients;
  const context = { job: job.id, message_id: message.messageId, relay: deps.relay?.display, attempt: t.attempts };

  if (outcome.kind === 'failed') {
    if (outcome.configurationProblem)
      deps.log.error(
        { ...context, status: outcome.status, diagnostic: outcome.diagnostic },
        'outbound mail: the relay refused our credentials or TLS; check INBOX_SMTP_RELAY_URL',
      );
    if (outcome.temporary && !t.expired) {
      const nextAt = t.nextAt();
      deps.log.warn(
        { ...context, status: outcome.status, diagnostic: outcome.diagnostic, next_attempt_at: nextAt.toISOString() },
        'outbound mail: the relay did not take the message; retrying',
      );
      throw new RetryJob(`${outcome.status} ${outcome.diagnostic}`, { at: nextAt });
    }
    const type: BounceType = outcome.temporary ? 'Transient' : 'Permanent';
    const error = `bounced (${type}): ${outcome.status} ${outcome.diagnostic}`;
    await commit(
      deps,
      job,
      { status: 'dead', error },
      bouncedEvents(
        message,
        type,
        recipients.map((address) => ({ address, status: outcome.status, diagnostic: outcome.diagnostic })),
        timestamp,
      ),
    );
    throw new GiveUpJob(error);
  }

  const permanent = outcome.refused.filter((r) => !r.temporary);
  const deferred = outcome.refused.filter((r) => r.temporary);
  if (!outcome.accepted.length && !permanent.length && !t.expired) {
    // Every recipient deferred: nothing happened, so this very job runs again.
    throw new RetryJob(`every recipient deferred: ${deferred.map((r) => `${r.address} ${r.status}`).join(', ')}`, {
      at: t.nextAt(),
    });
  }
  const inputs: EmitInput[] = [];
  if (outcome.accepted.length)
    inputs.push(sentEvent(message, recipients, timestamp), deliveredEvent(message, outcome.accepted, timestamp));
  if (permanent.length) inputs.push(...bouncedEvents(message, 'Permanent', permanent.map(bounced), timestamp));
  if (deferred.length && t.expired)
    inputs.push(...bouncedEvents(message, 'Transient', deferred.map(bounced), timestamp));
  const followUp: OutboundJob | undefined =
    deferred.length && !t.expired
      ? {
          ...job.payload,
          recipients: deferred.map((r) => r.address),
          queued_at: t.queuedAt,
          prior_attempts: t.attempts,
        }
      : undefined;
  // The job is done when the message left for someone (or will be tried again for someone), dead when it went to nobody.
  const end: JobEnd =
    outcome.accepted.length || followUp
      ? { status: 'done' }
      : { status: 'dead', error: `bounced: ${outcome.refused.map((r) => `${r.address} ${r.status}`).join(', ')}` };
  await commit(deps, job, end, inputs, followUp ? { payload: followUp, runAt: t.nextAt() } : undefined);
  if (end.status === 'dead') throw new GiveUpJob(end.error);
}

/**
 * Writes the events (and a follow-up job) and the job's end in one transaction, then wakes the
 * runner: a crash after the relay answered repeats the send, never the events.
 */
async function commit(
  deps: OutboundMailWorkerDeps,
  job: Job<OutboundJob>,
  end: JobEnd,
  inputs: readonly EmitInput[],
  followUp?: { payload: OutboundJob; runAt: Date },
): Promise<void> {
  const queued = await deps.commits.run(async (trx) => {
    const { jobs } = await deps.events.emitMany(trx, inputs);
    if (followUp) await enqueue(trx, deps.clock, OUTBOUND_MAIL_QUEUE, followUp.payload, followUp.runAt);
    await job.finish(trx, end);
    return jobs + (followUp ? 1 : 0);
  });
  if (queued) deps.notifyJobs();
}

/**
 * The job failed for a reason of our own (not the relay's answer) until the retry period was
 * over: the recipients bounce as Transient, in the transaction that marks the job dead. Built
 * from the job's payload and the inbox's pod only, so that it does not depend on what failed
 * (the message row, say). The reason goes to the log, not to the event: it may be internal.
 */
async function bounceUnsent(deps: OutboundMailWorkerDeps, job: Job<OutboundJob>, error: Error, trx: Db): Promise<void> {
  const p = job.payload;
  const podId = await findInboxPod(trx, p.inbox_id);
  deps.log.error(
    { job: job.id, message_id: p.message_id, err: error.message },
    'outbound mail: failed on our side until the end of the retry period; bouncing as Transient',
  );
  if (podId === undefined) return;
  const message: OutboundMessage = {
    pk: p.message_pk,
    organizationId: p.organization_id,
    inboxId: p.inbox_id,
    podId,
    domain: '',
    threadId: p.thread_id,
    messageId: p.message_id,
    from: p.inbox_id,
    recipients: p.recipients,
    labels: [],
  };
  const diagnostic =
    'the message could not be handed to the relay before the retry period ended (an error on our side)';
  await deps.events.emitMany(
    trx,
    bouncedEvents(
      message,
      'Transient',
      p.recipients.map((address) => ({ address, status: '4.3.0', diagnostic })),
      deps.clock.now().toISOString(),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Assembly from the settings.

export interface OutboundConfig extends RelayConfig, DkimConfig {
  readonly smtpRelayRetryHours: number;
}

export interface OutboundMail {
  readonly queue: QueueDefinition<OutboundJob>;
  /** Closes the relay's pooled connections (after the job runner has stopped). */
  close(): void;
}

/**
 * Checks the relay and DKIM settings together, throwing one ConfigError that names every problem,
 * and builds the queue. Runs in every role, so that a bad setting stops the process at boot.
 */
export function createOutboundMail(
  config: OutboundConfig,
  deps: Omit<OutboundMailWorkerDeps, 'relay' | 'dkim' | 'retryMs' | 'sendDeadlineMs'> & {
    domainKeys?: (domain: string) => Promise<DomainKey | undefined>;
  },
): OutboundMail {
  const problems: string[] = [];
  const relaySettings = relaySettingsFrom(config, problems);
  const serviceDkim = dkimSignerFrom(config, problems);
  // Custom domains sign with their own keys (domains/); the rest as the settings say.
  const dkim = deps.domainKeys ? withDomainKeys(serviceDkim, deps.domainKeys) : serviceDkim;
  if (problems.length) throw new ConfigError(problems);
  const relay = relaySettings ? createRelayClient(relaySettings) : undefined;
  // Connect, greet, TLS, authenticate, send: a few timeouts' worth, plus a wait for a pooled connection.
  const sendDeadlineMs = 4 * config.smtpRelayTimeoutMs;
  // As many sends at once as the relay has connections: more would only wait for one, inside their deadline.
  const queue = {
    ...outboundMailQueue({ ...deps, relay, dkim, retryMs: config.smtpRelayRetryHours * 3600e3, sendDeadlineMs }),
    concurrency: config.smtpRelayMaxConnections,
  };
  return { queue, close: () => relay?.close() };
}
