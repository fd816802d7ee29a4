import type { Kysely, Transaction } from 'kysely';

/** The base types of every database of this package, apart from the driver (database.ts) that opens one. */
export type Dialect = 'sqlite' | 'postgres';

/** What repositories accept: the database or a transaction opened at the edge. */
export type Executor<DB> = Kysely<DB> | Transaction<DB>;
