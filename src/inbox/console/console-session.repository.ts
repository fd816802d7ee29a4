import type { Db } from '../schema/database.js';

/** The rows of console sessions (schema/console-session.table.ts); the owner behind one is api-keys' findKeyOwnerBySession. */

export async function insertConsoleSession(
  db: Db,
  row: { tokenHash: string; apiKeyId: string; csrfToken: string; createdAt: string; expiresAt: string },
): Promise<void> {
  await db
    .insertInto('console_sessions')
    .values({
      token_hash: row.tokenHash,
      api_key_id: row.apiKeyId,
      csrf_token: row.csrfToken,
      created_at: row.createdAt,
      expires_at: row.expiresAt,
    })
    .execute();
}

export async function deleteConsoleSession(db: Db, tokenHash: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
}

/** Sessions past their time: nothing reads them any more; they go when someone signs in. */
export async function deleteExpiredConsoleSessions(db: Db, now: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('expires_at', '<=', now).execute();
}
