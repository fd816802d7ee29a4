import type { Kysely } from 'kysely';
import { runCompiledOnce } from '../../platform/db/compiled-once.js';
import { hashSecret } from '../../platform/ids.js';
import type { Principal } from '../engine/define.js';
import type { SecurityDatabase } from './account.table.js';

/**
 * X-API-KEY authentication: a key is looked up by its SHA-256 hash (only the hash is stored), so
 * the comparison never touches the secret itself and its timing reveals nothing useful.
 */
export function createApiKeyAuthenticator(db: Kysely<SecurityDatabase>) {
  return async (apiKey: string): Promise<Principal | null> => {
    const hash = hashSecret(apiKey);
    const [row] = await runCompiledOnce(db, 'principal-by-key-hash', [hash], () =>
      db.selectFrom('users').select(['id', 'role']).where('api_key_hash', '=', hash),
    );
    return row ? { id: Number(row.id), role: row.role } : null;
  };
}

/**
 * Gives the account with this e-mail address (case-insensitive) the new key `issued` (from
 * `generateApiKey`; only its hash is stored): the old key stops working at once. The account, or
 * undefined when no account has that address.
 */
export async function replaceApiKey(
  db: Kysely<SecurityDatabase>,
  email: string,
  issued: { readonly hash: string },
): Promise<{ id: number; email: string } | undefined> {
  const row = await db
    .updateTable('users')
    .set({ api_key_hash: issued.hash })
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .returning(['id', 'email'])
    .executeTakeFirst();
  return row ? { id: Number(row.id), email: row.email } : undefined;
}
