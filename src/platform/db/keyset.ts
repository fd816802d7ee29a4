import type { ExpressionBuilder, Expression, SqlBool } from 'kysely';

export type Direction = 'asc' | 'desc';

/**
 * The keyset condition "after (sortValue, tiebreak)" in the given direction: page N costs what
 * page 1 costs, at any table size, given an index on (…, sortColumn, tiebreakColumn).
 */
export function afterKey<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  sortColumn: string,
  tiebreakColumn: string,
  key: { readonly sort: string | number; readonly tiebreak: string | number },
  direction: Direction,
): Expression<SqlBool> {
  const op = direction === 'asc' ? '>' : '<';
  const ref = eb.ref as unknown as (c: string) => Expression<unknown>;
  const cmp = eb as unknown as (l: Expression<unknown>, op: string, r: unknown) => Expression<SqlBool>;
  // The redundant bound `sort <= key` (or `>=`) lets SQLite seek the index to the key; with the
  // OR alone it walks the index from the first entry and filters, so page N would cost O(N).
  return eb.and([
    cmp(ref(sortColumn), `${op}=`, key.sort),
    eb.or([
      cmp(ref(sortColumn), op, key.sort),
      eb.and([cmp(ref(sortColumn), '=', key.sort), cmp(ref(tiebreakColumn), op, key.tiebreak)]),
    ]),
  ]);
}
