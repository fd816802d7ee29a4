import { pageEnvelope } from '../core/page.wire.js';
import { Type, type Static } from 'typebox';
import { errorResponses } from '../http/common.schemas.js';
import { ownerOf } from '../http/auth.js';
import type { InboxApp } from '../http/types.js';
import { InboxResponse, toInboxResponse } from '../core/inbox.wire.js';
import { InboxIdParams } from '../messages/message.schemas.js';
import { MessageItemResponse, toMessageItemResponse } from '../core/message.wire.js';
import { ThreadItemResponse, toThreadItemResponse } from '../core/thread.wire.js';
import { PodIdParams, SearchInboxesQuery, SearchQuery } from './search.schemas.js';
import type { SearchQuery as SearchInput, SearchService } from './search.service.js';

const page = { count: Type.Integer(), limit: Type.Integer(), next_page_token: Type.Optional(Type.String()) };
const SearchMessagesResponse = Type.Object({
  ...page,
  messages: Type.Array(MessageItemResponse, { description: 'Best match first' }),
});
const SearchThreadsResponse = Type.Object({
  ...page,
  threads: Type.Array(ThreadItemResponse, { description: 'Best match first' }),
});
const SearchInboxesResponse = Type.Object({
  ...page,
  inboxes: Type.Array(InboxResponse, { description: 'Newest first' }),
});

function input(q: Static<typeof SearchQuery>): SearchInput {
  return {
    q: q.q,
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.page_token ? { pageToken: q.page_token } : {}),
    ...(q.before !== undefined ? { before: q.before } : {}),
    ...(q.after !== undefined ? { after: q.after } : {}),
  };
}

/**
 * The search routes, and their pod-level variants. Registered as static paths (`…/search`), which
 * the router prefers to the `/:id` routes beside them.
 */
export function searchRoutes(app: InboxApp, search: SearchService): void {
  const tags = ['search'];

  app.get('/v0/inboxes/:inbox_id/messages/search', {
    schema: {
      tags,
      summary: 'Search the messages of an inbox (full text), best match first',
      params: InboxIdParams,
      querystring: SearchQuery,
      response: { 200: SearchMessagesResponse, ...errorResponses },
    },
    handler: async (request) =>
      pageEnvelope(
        'messages',
        await search.messages(ownerOf(request), request.params.inbox_id, input(request.query)),
        toMessageItemResponse,
      ),
  });

  app.get('/v0/inboxes/:inbox_id/threads/search', {
    schema: {
      tags,
      summary: 'Search the threads of an inbox (full text), best match first',
      params: InboxIdParams,
      querystring: SearchQuery,
      response: { 200: SearchThreadsResponse, ...errorResponses },
    },
    handler: async (request) =>
      pageEnvelope(
        'threads',
        await search.threads(ownerOf(request), { inboxId: request.params.inbox_id }, input(request.query)),
        toThreadItemResponse,
      ),
  });

  app.get('/v0/threads/search', {
    schema: {
      tags,
      summary: 'Search the threads of every inbox the key may see, best match first',
      querystring: SearchQuery,
      response: { 200: SearchThreadsResponse, ...errorResponses },
    },
    handler: async (request) =>
      pageEnvelope('threads', await search.threads(ownerOf(request), {}, input(request.query)), toThreadItemResponse),
  });

  app.get('/v0/pods/:pod_id/threads/search', {
    schema: {
      tags,
      summary: 'Search the threads of the inboxes of a pod, best match first',
      params: PodIdParams,
      querystring: SearchQuery,
      response: { 200: SearchThreadsResponse, ...errorResponses },
    },
    handler: async (request) =>
      pageEnvelope(
        'threads',
        await search.threads(ownerOf(request), { podId: request.params.pod_id }, input(request.query)),
        toThreadItemResponse,
      ),
  });

  const inboxSearch = (q: Static<typeof SearchInboxesQuery>) => ({
    q: q.q,
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.page_token ? { pageToken: q.page_token } : {}),
  });

  app.get('/v0/inboxes/search', {
    schema: {
      tags,
      summary: 'Find inboxes by address or display name (word prefixes), newest first',
      querystring: SearchInboxesQuery,
      response: { 200: SearchInboxesResponse, ...errorResponses },
    },
    handler: async (request) =>
      pageEnvelope('inboxes', await search.inboxes(ownerOf(request), inboxSearch(request.query)), toInboxResponse),
  });

  app.get('/v0/pods/:pod_id/inboxes/search', {
    schema: {
      tags,
      summary: 'Find the inboxes of a pod by address or display name',
      params: PodIdParams,
      querystring: SearchInboxesQuery,
      response: { 200: SearchInboxesResponse, ...errorResponses },
    },
    handler: async (request) =>
      pageEnvelope(
        'inboxes',
        await search.inboxes(ownerOf(request), { ...inboxSearch(request.query), podId: request.params.pod_id }),
        toInboxResponse,
      ),
  });
}
