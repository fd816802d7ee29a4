import type pg from 'pg';

/**
 * Named prepared statements on PostgreSQL (decision 0054).
 *
 * Kysely's pg driver and our direct runner send every statement unnamed, so the server parses
 * and plans it again on every execution: for a send, that was more CPU in the server than in our
 * whole process. The pool's clients here give a statement text a name on their connection once
 * the process has run that text PREPARE_AFTER times, and from then on execute it by name: the
 * server parses it once per connection and can keep its plan.
 *
 * - Only SELECT, INSERT, UPDATE, DELETE and WITH texts are named; BEGIN, COMMIT, NOTIFY, DDL and
 *   anything else go as before. Texts that change with their input (an IN list of n values) are
 *   named only once one of them recurs.
 * - A connection keeps at most MAX_NAMED_PER_CONNECTION names. Naming one more gives back the
 *   least recently used: the next time the connection is idle (outside a transaction) it runs
 *   `DEALLOCATE` for it, so the server frees its parse tree and plans, and the client forgets it.
 *   So a process whose statements outnumber the limit keeps its busiest ones named, whatever ran
 *   first (as pgjdbc's statement cache does).
 * - A named statement whose result columns changed under it (another instance's migration added
 *   a column to a table read with `select *`) fails once with `cached plan must not change result
 *   type`. The client gives that name back, so the text is prepared again under a new one. Outside a
 *   transaction it runs the statement again at once; inside one the transaction is lost, and the
 *   error counts as a transient conflict (dialect.ts), so a unit of work is run again.
 * - Off (`DB_PREPARED_STATEMENTS=false`) for a pooler that hands each transaction a different
 *   server connection and does not track prepared statements (PgBouncer in transaction mode before
 *   1.21).
 */

/** Runs of one text in this process after which connections name it. */
export const PREPARE_AFTER = 2;

/**
 * Texts one connection keeps named; PostgreSQL keeps each one's parse tree and plans per backend,
 * and the least recently used is given back for a new one.
 */
export const MAX_NAMED_PER_CONNECTION = 256;

/** Distinct texts whose runs are counted; the counts start again when there are more. */
const MAX_COUNTED = 10_000;

const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;

/** True for the error PostgreSQL raises when a prepared statement's result columns changed. */
export function isStalePreparedStatement(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '0A000' && /cached plan must not change result type/.test(e.message ?? '');
}

type Callback = (err: Error | null, result?: unknown) => void;

/** The pg `Client` class whose connections name the statements this process runs often. */
export function namingClient(pgModule: typeof pg): typeof pg.Client {
  const runs = new Map<string, number>();
  const countRun = (text: string): number => {
    if (runs.size >= MAX_COUNTED && !runs.has(text)) runs.clear();
    const n = (runs.get(text) ?? 0) + 1;
    runs.set(text, n);
    return n;
  };

  class NamingClient extends pgModule.Client {
    /** The names this connection gave, by text, the least recently used first. */
    private readonly names = new Map<string, string>();
    /** Names given back, still to be deallocated on the server when the connection is next idle. */
    private readonly retired: string[] = [];
    /** Names given on this connection: a name is never given twice. */
    private given = 0;

    private nameFor(text: string): string | undefined {
      const known = this.names.get(text);
      if (known !== undefined) {
        // Now the most recently used.
        this.names.delete(text);
        this.names.set(text, known);
        return known;
      }
      if (countRun(text) < PREPARE_AFTER) return undefined;
      if (this.names.size >= MAX_NAMED_PER_CONNECTION) {
        const [oldest, name] = this.names.entries().next().value as [string, string];
        this.retire(oldest, name);
      }
      const name = `s${++this.given}`;
      this.names.set(text, name);
      return name;
    }

    private retire(text: string, name: string): void {
      this.names.delete(text);
      this.retired.push(name);
    }

    /**
     * Deallocates the names given back, when the connection is outside a transaction: pg queues it
     * after what was sent before (which may still use one), and nothing sent later can (names are
     * never given twice). A name that never parsed (its first run failed) is not on the server.
     * pg forgets a name once the server has.
     */
    private deallocateRetired(): void {
      if (!this.retired.length || this.getTransactionStatus() !== 'I') return;
      const parsed = (this as unknown as { connection?: { parsedStatements?: Record<string, string> } }).connection
        ?.parsedStatements;
      for (const name of this.retired.splice(0)) {
        if (parsed?.[name] === undefined) continue;
        (super.query as (text: string) => Promise<unknown>)(`DEALLOCATE ${name}`).then(
          () => delete parsed[name],
          () => undefined,
        );
      }
    }

    // pg's overloads: (text | config, values?, callback?) returning a promise without a callback.
    override query(...args: unknown[]): never {
      const [config, second, third] = args;
      const text =
        typeof config === 'string'
          ? config
          : config && typeof config === 'object' && !('submit' in config) && !('name' in config)
            ? (config as { text?: unknown }).text
            : undefined;
      this.deallocateRetired();
      const name = typeof text === 'string' && PREPARABLE.test(text) ? this.nameFor(text) : undefined;
      if (name === undefined) return (super.query as (...a: unknown[]) => never)(...args);
      const values = typeof second === 'function' ? undefined : second;
      const callback = (typeof second === 'function' ? second : third) as Callback | undefined;
      const base = typeof config === 'string' ? { text } : (config as object);
      const run = (named: boolean): Promise<unknown> =>
        (super.query as (c: object, v?: unknown) => Promise<unknown>)(
          named ? { ...base, name } : base,
          values ?? (base as { values?: unknown }).values,
        );
      const idle = this.getTransactionStatus() === 'I';
      const result = run(true).catch((error: unknown) => {
        if (!isStalePreparedStatement(error)) throw error;
        if (this.names.get(text as string) === name) this.retire(text as string, name);
        if (!idle) throw error;
        return run(false);
      });
      if (!callback) return result as never;
      result.then(
        (r) => callback(null, r),
        (e: Error) => callback(e),
      );
      return undefined as never;
    }
  }
  return NamingClient;
}
