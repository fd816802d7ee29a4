import type { Db } from '../schema/database.js';
import type { Cursor } from '../../platform/db/cursor.js';
import { afterKey } from '../../platform/db/keyset.js';

/** The SQL of pods. */

export interface Pod {
  readonly podId: string;
  readonly organizationId: string;
  readonly name: string;
  readonly clientId: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

function podFromRow(row: {
  id: string;
  organization_id: string;
  name: string;
  client_id: string | null;
  created_at: string;
  updated_at: string | null;
}): Pod {
  return {
    podId: row.id,
    organizationId: row.organization_id,
    name: row.name,
    clientId: row.client_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at ?? row.created_at,
  };
}

export async function insertPod(
  db: Db,
  pod: { id: string; organizationId: string; name: string; createdAt: string; clientId?: string | null },
): Promise<void> {
  await db
    .insertInto('pods')
    .values({
      id: pod.id,
      organization_id: pod.organizationId,
      name: pod.name,
      created_at: pod.createdAt,
      client_id: pod.clientId ?? null,
      updated_at: pod.createdAt,
    })
    .execute();
}

export async function findPod(db: Db, organizationId: string, podId: string): Promise<Pod | undefined> {
  const row = await db
    .selectFrom('pods')
    .selectAll()
    .where('id', '=', podId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return row ? podFromRow(row) : undefined;
}

export async function findPodByClientId(db: Db, organizationId: string, clientId: string): Promise<Pod | undefined> {
  const row = await db
    .selectFrom('pods')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row ? podFromRow(row) : undefined;
}

export async function listPods(
  db: Db,
  organizationId: string,
  options: { podId?: string; limit: number; direction: 'asc' | 'desc'; after?: Cursor },
): Promise<Pod[]> {
  let q = db.selectFrom('pods').selectAll().where('organization_id', '=', organizationId);
  if (options.podId !== undefined) q = q.where('id', '=', options.podId);
  const after = options.after;
  if (after) q = q.where((eb) => afterKey(eb, 'created_at', 'id', after, options.direction));
  const rows = await q
    .orderBy('created_at', options.direction)
    .orderBy('id', options.direction)
    .limit(options.limit + 1)
    .execute();
  return rows.map(podFromRow);
}

export async function podHasInboxes(db: Db, podId: string): Promise<boolean> {
  return (
    (await db.selectFrom('inboxes').select('inbox_id').where('pod_id', '=', podId).limit(1).executeTakeFirst()) !==
    undefined
  );
}

/** Deletes the pod (its keys go with it: foreign key). */
export async function deletePod(db: Db, organizationId: string, podId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('pods')
    .where('id', '=', podId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The organization's default pod: its oldest one. */
export async function findDefaultPodId(db: Db, organizationId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('pods')
    .select('id')
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

export async function podBelongsTo(db: Db, podId: string, organizationId: string): Promise<boolean> {
  return (
    (await db
      .selectFrom('pods')
      .select('id')
      .where('id', '=', podId)
      .where('organization_id', '=', organizationId)
      .executeTakeFirst()) !== undefined
  );
}
