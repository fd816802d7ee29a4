import { Type } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import {
  CreateListEntryBody,
  EntryParams,
  InboxEntryParams,
  InboxListParams,
  ListEntriesQuery,
  ListEntriesResponse,
  ListEntryResponse,
  ListParams,
  PodEntryParams,
  PodListEntriesResponse,
  PodListEntryResponse,
  PodListParams,
  toListEntryResponse,
  toPodListEntryResponse,
} from './access-list.schemas.js';
import type { AccessListService, ListAddress } from './access-list.service.js';

const pageOf = <T>(
  result: { limit: number; items: T[]; nextPageToken: string | undefined },
  wire: (item: T) => object,
) => ({
  count: result.items.length,
  limit: result.limit,
  ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
  entries: result.items.map(wire),
});

const queryOf = (q: { limit?: number; page_token?: string }) => ({
  ...(q.limit !== undefined ? { limit: q.limit } : {}),
  ...(q.page_token ? { pageToken: q.page_token } : {}),
});

/**
 * Allow and block lists at the organization (`/v0/lists`), pod (`/v0/pods/:pod_id/lists`) and
 * inbox (`/v0/inboxes/:inbox_id/lists`) levels: list, get, create, delete. Permissions
 * listEntryRead / listEntryCreate / listEntryDelete; levels outside the key's scope answer 404.
 */
export function accessListRoutes(app: InboxApp, lists: AccessListService): void {
  const tags = ['lists'];
  const conflict = { 409: Type.Ref('ErrorResponse') };
  const levels: {
    prefix: string;
    params: {
      list: typeof ListParams | typeof PodListParams | typeof InboxListParams;
      entry: typeof EntryParams | typeof PodEntryParams | typeof InboxEntryParams;
    };
    pod: boolean;
    of: (p: Record<string, string>) => ListAddress;
    what: string;
  }[] = [
    {
      prefix: '/v0/lists',
      params: { list: ListParams, entry: EntryParams },
      pod: false,
      of: () => ({ level: 'organization' }),
      what: "the organization's",
    },
    {
      prefix: '/v0/pods/:pod_id/lists',
      params: { list: PodListParams, entry: PodEntryParams },
      pod: true,
      of: (p) => ({ level: 'pod', podId: p.pod_id as string }),
      what: "a pod's",
    },
    {
      prefix: '/v0/inboxes/:inbox_id/lists',
      params: { list: InboxListParams, entry: InboxEntryParams },
      pod: true,
      of: (p) => ({ level: 'inbox', inboxId: p.inbox_id as string }),
      what: "an inbox's",
    },
  ];
  for (const level of levels) {
    const one = level.pod ? PodListEntryResponse : ListEntryResponse;
    const wire = level.pod ? toPodListEntryResponse : toListEntryResponse;
    app.get(`${level.prefix}/:direction/:type`, {
      schema: {
        tags,
        summary: `List entries of ${level.what} allow or block list, by entry ascending`,
        params: level.params.list,
        querystring: ListEntriesQuery,
        response: { 200: level.pod ? PodListEntriesResponse : ListEntriesResponse, ...errorResponses },
      },
      handler: async (request) => {
        const p = request.params as Record<string, string>;
        return pageOf(
          await lists.list(
            ownerOf(request),
            level.of(p),
            p.direction as string,
            p.type as string,
            queryOf(request.query),
          ),
          wire,
        );
      },
    });
    app.get(`${level.prefix}/:direction/:type/:entry`, {
      schema: {
        tags,
        summary: `Get an entry of ${level.what} list`,
        params: level.params.entry,
        response: { 200: one, ...errorResponses },
      },
      handler: async (request) => {
        const p = request.params as Record<string, string>;
        return wire(
          await lists.get(ownerOf(request), level.of(p), p.direction as string, p.type as string, p.entry as string),
        );
      },
    });
    app.post(`${level.prefix}/:direction/:type`, {
      schema: {
        tags,
        summary: `Add an address or a domain to ${level.what} list`,
        description:
          'A domain covers its subdomains. Block entries refuse at every level; each level with an allow list must name the address (docs/decisions/0020).',
        params: level.params.list,
        body: CreateListEntryBody,
        response: { 200: one, ...conflict, ...errorResponses },
      },
      handler: async (request) => {
        const p = request.params as Record<string, string>;
        const b = request.body;
        return wire(
          await lists.create(ownerOf(request), level.of(p), p.direction as string, p.type as string, {
            entry: b.entry,
            ...(b.reason !== undefined ? { reason: b.reason } : {}),
          }),
        );
      },
    });
    app.delete(`${level.prefix}/:direction/:type/:entry`, {
      schema: {
        tags,
        summary: `Remove an entry from ${level.what} list`,
        params: level.params.entry,
        response: { 204: Type.Null(), ...errorResponses },
      },
      handler: async (request, reply) => {
        const p = request.params as Record<string, string>;
        await lists.delete(ownerOf(request), level.of(p), p.direction as string, p.type as string, p.entry as string);
        return reply.code(204).send(null);
      },
    });
  }
}
