import type { Kysely } from 'kysely';

// Sessions of the web console (docs/decisions/0046-console-sessions.md): a person signs in with an
// API key and gets a cookie; the row keeps the SHA-256 of the cookie's token (never the token nor
// the key), the key it stands for (gone with the key), the CSRF token every request must repeat,
// and the server-side expiry.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    .addColumn('token_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('api_key_id', 'varchar(64)', (c) => c.notNull().references('api_keys.id').onDelete('cascade'))
    .addColumn('csrf_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('console_sessions_key').on('console_sessions').column('api_key_id').execute();
  await db.schema.createIndex('console_sessions_expiry').on('console_sessions').column('expires_at').execute();
}
