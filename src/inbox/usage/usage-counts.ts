import type { USAGE_TYPES } from '../core/events.js';
import { type UsageDelta, addUsage, USAGE_SHARDS, sumBefore } from './usage.repository.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import { randomInt } from 'node:crypto';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import type { Clock } from '../../platform/clock.js';
import type { Inbox } from '../core/inbox.js';

/**
 * The counts behind metrics.queryEvents and queryUsage, written in the transaction of what they
 * count (decision 0020); usage.service.ts reads them.
 */

export type UsageType = (typeof USAGE_TYPES)[number];

/** The usage types this service counts, per scope (pod_count and domain_count are not counted yet). */
export const COUNTED_USAGE: Record<'inbox' | 'pod' | 'organization', readonly UsageType[]> = {
  inbox: ['storage_bytes', 'message_count', 'thread_count'],
  pod: ['storage_bytes', 'message_count', 'thread_count', 'inbox_count'],
  organization: ['storage_bytes', 'message_count', 'thread_count', 'inbox_count'],
};

export const usageMetric = (t: UsageType) => `usage.${t}`;

export const seconds = (at: Date | string): number => Math.floor(new Date(at).getTime() / 1000);

/** A count of one at `at` for the inbox (events, received copies). */
export function countOf(
  scope: { organizationId: string; podId: string; inboxId: string },
  metric: string,
  at: Date | string,
  value = 1,
): UsageDelta {
  return {
    organizationId: scope.organizationId,
    podId: scope.podId,
    inboxId: scope.inboxId,
    metric,
    bucket: seconds(at),
    value,
  };
}

/** A usage delta (stored messages, bytes, threads) of an inbox. */
export function usageOf(
  scope: { organizationId: string; podId: string; inboxId: string },
  type: 'storage_bytes' | 'message_count' | 'thread_count',
  at: Date | string,
  value: number,
): UsageDelta {
  return countOf(scope, usageMetric(type), at, value);
}

/** A change of the inbox count of a pod. */
export function inboxCountOf(
  scope: { organizationId: string; podId: string },
  at: Date | string,
  value: number,
): UsageDelta {
  return {
    organizationId: scope.organizationId,
    podId: scope.podId,
    inboxId: '',
    metric: usageMetric('inbox_count'),
    bucket: seconds(at),
    value,
  };
}

/** Adds the deltas in the caller's unit of work (one statement). */
export async function recordUsage(trx: Db, deltas: readonly UsageDelta[]): Promise<void> {
  await addUsage(trx, deltas, randomInt(USAGE_SHARDS));
}

/**
 * What an inbox's creation and deletion change: the pod's inbox count, and on deletion everything
 * the inbox held (its stored messages, bytes and threads, from its own counts) and its allow and
 * block lists. Runs after the inbox row changed, in a unit of work of its own.
 */
export function inboxLifecycle({
  commits,
  clock,
  dropLists,
}: {
  commits: GroupCommit<InboxDatabase>;
  clock: Clock;
  dropLists: (trx: Db, inbox: Inbox) => Promise<void>;
}) {
  const stored = (['storage_bytes', 'message_count', 'thread_count'] as const).map(usageMetric);
  return {
    async created(inbox: Inbox): Promise<void> {
      await commits.run((trx) => recordUsage(trx, [inboxCountOf(inbox, clock.now(), 1)]));
    },
    async deleted(inbox: Inbox): Promise<void> {
      await commits.run(async (trx) => {
        const now = clock.now();
        const held = await sumBefore(trx, inbox, stored, Number.MAX_SAFE_INTEGER);
        await recordUsage(trx, [
          inboxCountOf(inbox, now, -1),
          ...[...held].map(([metric, value]) => countOf(inbox, metric, now, -value)),
        ]);
        await dropLists(trx, inbox);
      });
    },
  };
}

/** A thread removed for good: its messages, their bytes and the thread leave the inbox's usage. */
export async function threadDeleted(
  trx: Db,
  inbox: { organizationId: string; podId: string; inboxId: string },
  messages: readonly { size: number }[],
  at: Date,
): Promise<void> {
  await recordUsage(trx, [
    usageOf(inbox, 'thread_count', at, -1),
    usageOf(inbox, 'message_count', at, -messages.length),
    usageOf(inbox, 'storage_bytes', at, -messages.reduce((n, m) => n + m.size, 0)),
  ]);
}
