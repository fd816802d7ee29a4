/**
 * The envelope of every list answer of the wire (AgentMail's): `count`, `limit`, `next_page_token`
 * when there is a next page, and the items under their name. For routes and every other door.
 */
export interface ListPage<T> {
  readonly limit: number;
  readonly items: readonly T[];
  readonly nextPageToken?: string | undefined;
}

export function pageEnvelope<T, K extends string, W>(key: K, result: ListPage<T>, present: (item: T) => W) {
  return {
    count: result.items.length,
    limit: result.limit,
    ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
    [key]: result.items.map(present),
  } as { count: number; limit: number; next_page_token?: string } & Record<K, W[]>;
}
