import type { Dialect } from './database.js';

/**
 * Dialect differences live here and nowhere else.
 */

/** True when `err` is a unique-constraint violation in either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string } | undefined;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True when `err` is a foreign-key violation in either dialect. */
export function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  // SQLite reports ON DELETE RESTRICT through its trigger machinery.
  return e?.code === '23503' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || (e?.code === 'SQLITE_CONSTRAINT_TRIGGER' && /FOREIGN KEY/.test(e.message ?? ''));
}

/** Column type for an auto-incrementing integer primary key. */
export function serialPrimaryKey(dialect: Dialect): 'integer' | 'serial' {
  return dialect === 'postgres' ? 'serial' : 'integer';
}

/** Column type for a floating-point number. */
export function floatType(dialect: Dialect): 'real' | 'double precision' {
  return dialect === 'postgres' ? 'double precision' : 'real';
}

/** Which dialect a Kysely instance speaks; migrations are typed on Kysely<any> and ask this. */
export function dialectOf(db: { getExecutor(): { adapter: object } }): Dialect {
  return db.getExecutor().adapter.constructor.name.startsWith('Postgres') ? 'postgres' : 'sqlite';
}
