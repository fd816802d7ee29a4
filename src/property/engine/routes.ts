import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { NotFoundError, PreconditionFailedError, UnauthenticatedError } from '../../platform/errors/app-error.js';
import { inFlightOf } from '../../platform/http/app.js';
import { OPERATION_METHOD, type Item, type OperationName, type Principal } from './define.js';
import { contextDocument, entrypointDocument } from './contexts.js';
import { prefersHtml } from './docs.routes.js';
import { MethodNotAllowedError } from './errors.js';
import {
  CACHE_TAGS_HEADER,
  MAX_TAGS_LENGTH,
  PRIVATE_CACHE_CONTROL,
  publicCacheControl,
  tagsOf,
  type HttpCacheDefaults,
} from './http-cache.js';
import { CONTENT_TYPE, apiDocLink, docsUrl, etagOf, jsonBody, sendError, sendJson, type HttpSettings } from './http.js';
import { OUTPUT_FORMATS, SUFFIX_FORMATS, negotiate, type Format } from './negotiation.js';
import { selectedProperties } from './filters.js';
import type { Engine, ParentSelection, Precondition } from './operations.js';
import { parseQuery } from './query.js';
import type { LinkMetadata, ResourceMetadata } from './registry.js';
import { normalizeCollection, normalizeItem } from './serializer.js';

export interface RouteOptions extends HttpSettings {
  readonly engine: Engine;
  /** Resolves an X-API-KEY value to its account, or null when the key is unknown. */
  readonly authenticate: (apiKey: string) => Promise<Principal | null>;
  readonly pageParameter: string;
  /** CORS headers for an actual request with this Origin (preflights are answered elsewhere). */
  readonly corsHeaders: (origin: string | undefined) => Readonly<Record<string, string>>;
  /**
   * Called after each committed write of a persisted resource, before the answer: the Mercure
   * publisher and the shared cache's purge (app.ts joins them). What it returns is awaited, so a
   * hook that must land before the client reads again (a purge) returns its promise, and one that
   * must not hold the answer (a publish) returns nothing. It must not reject: a committed write
   * stays a success. `item` is what a GET answers now; for a delete, the item as it was.
   */
  readonly onWrite?: (write: CommittedWrite) => void | Promise<void>;
  /** Lifetimes of public answers whose resource does not set its own (decision 0047). */
  readonly httpCache: HttpCacheDefaults;
  /**
   * Whether X-Forwarded-Host and X-Forwarded-Proto decide the absolute URLs of an answer (a
   * trusted proxy without a fixed public URL): then Vary names them too.
   */
  readonly varyForwarded?: boolean;
}

export interface CommittedWrite {
  readonly request: FastifyRequest;
  readonly resource: ResourceMetadata;
  readonly operation: 'post' | 'put' | 'patch' | 'delete';
  readonly item: Item;
}

const ALL_METHODS: readonly HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const WRITE_TYPES = ['application/ld+json', 'application/json'];
/**
 * API Platform's default response headers, besides the docs Link. Vary names every request
 * header an answer depends on: the format (Accept) and the caller (X-API-KEY decides what a
 * collection lists, and whether an item is there at all), so no cache hands one key's answer to
 * another (issue 31). Answers of public resources, the same for every caller, do not name the key
 * (decision 0047). Nothing varies on Accept-Language: the service speaks one language.
 */
const STATIC_HEADERS = {
  vary: 'Accept, X-API-KEY',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'deny',
  'cache-control': PRIVATE_CACHE_CONTROL,
} as const;
const FORWARDED_VARY = 'X-Forwarded-Host, X-Forwarded-Proto';
const PATCH_TYPES = ['application/merge-patch+json'];

/** Splits `7.jsonld` into id and format; an unknown suffix is a 404, as in API Platform. */
function splitSuffix(raw: string): { base: string; format: Format | undefined } {
  const dot = raw.lastIndexOf('.');
  if (dot < 0) return { base: raw, format: undefined };
  const format = SUFFIX_FORMATS[raw.slice(dot + 1)];
  if (!format) throw new NotFoundError();
  return { base: raw.slice(0, dot), format };
}

/**
 * The If-Match check of a write (RFC 9110 §13.1.1): it holds when the header is absent, is `*`
 * (the item exists, which loading it proved), or names the strong ETag a GET of the item would
 * answer now, in either format (JSON-LD and JSON bodies differ, and so do their ETags).
 * Otherwise the client's copy is stale: 412, and nothing is written.
 */
function ifMatch(request: FastifyRequest, etagsOf: (item: Item) => readonly string[]): Precondition | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  const tags = header
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  return (current) => {
    if (tags.includes('*')) return;
    const now = etagsOf(current);
    if (!tags.some((t) => now.includes(t)))
      throw new PreconditionFailedError(
        'The resource has changed since it was read (If-Match does not match its current ETag).',
      );
  };
}

/**
 * Registers the HTTP face of every resource of the registry, the entrypoint and the JSON-LD
 * contexts. Routes are thin: they negotiate, authenticate and call the engine's operations.
 */
export function registerResourceRoutes(app: FastifyInstance, options: RouteOptions): void {
  const { engine } = options;
  const registry = engine.registry;

  // Every response carries the docs Link, API Platform's default headers and CORS; errors add
  // theirs. The Link depends only on the Host header: remember it per host (a bounded table).
  const links = new Map<string, string>();
  const linkFor = (request: FastifyRequest): string => {
    const key = `${request.protocol}://${request.host}`;
    let link = links.get(key);
    if (link === undefined) {
      link = apiDocLink(request, options);
      if (links.size >= 100) links.clear();
      links.set(key, link);
    }
    return link;
  };
  // The default headers joined with each distinct CORS answer, once (the CORS objects are shared),
  // and the Vary of a public answer, which is the same without the key.
  const baseVary = options.varyForwarded ? `${STATIC_HEADERS.vary}, ${FORWARDED_VARY}` : STATIC_HEADERS.vary;
  const withCors = new WeakMap<object, { all: Readonly<Record<string, string>>; publicVary: string }>();
  const headersFor = (origin: string | undefined) => {
    const cors = options.corsHeaders(origin);
    let headers = withCors.get(cors);
    if (!headers) {
      const vary = cors.vary ? `${baseVary}, ${cors.vary}` : baseVary;
      headers = {
        all: { ...STATIC_HEADERS, ...cors, vary },
        publicVary: vary
          .split(', ')
          .filter((h) => h !== 'X-API-KEY')
          .join(', '),
      };
      withCors.set(cors, headers);
    }
    return headers;
  };
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('link', linkFor(request)).headers(headersFor(request.headers.origin).all);
    done();
  });

  /**
   * A successful read: its cache tags, and for a public resource the shared Cache-Control and the
   * Vary without the key. A tag list too long to send keeps the answer private (http-cache.ts).
   */
  const publicControl = new Map(registry.resources.map((r) => [r, publicCacheControl(r, options.httpCache)]));
  const sendRead = (
    request: FastifyRequest,
    reply: FastifyReply,
    resource: ResourceMetadata,
    items: readonly Item[],
    collection: boolean,
    format: Format,
    body: unknown,
  ) => {
    const tags = tagsOf(registry, resource, items, collection).join(',');
    if (tags.length <= MAX_TAGS_LENGTH) {
      reply.header(CACHE_TAGS_HEADER, tags);
      const control = publicControl.get(resource);
      if (control) reply.header('cache-control', control).header('vary', headersFor(request.headers.origin).publicVary);
    }
    return sendJson(request, reply, 200, CONTENT_TYPE[format], body);
  };
  app.setErrorHandler((err, request, reply) => sendError(request, reply, err, options));
  app.setNotFoundHandler((request, reply) => sendError(request, reply, new NotFoundError(), options));
  // Bodies are read as text and parsed by the engine, so that every syntax error and every media
  // type is answered in the API's own error format.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  // A present key is checked on every API route, public ones included: an unknown key answers
  // 401 rather than silently falling back to anonymous access. Handlers read the result.
  const principals = new WeakMap<FastifyRequest, Principal>();
  const inFlight = inFlightOf(app);
  app.addHook('preHandler', (request, _reply, done) => {
    const key = request.headers['x-api-key'];
    if (key === undefined || key === '' || !request.url.startsWith(registry.prefix)) return done();
    const lookup =
      typeof key === 'string' && key.length <= 200 ? inFlight.track(options.authenticate(key)) : Promise.resolve(null);
    lookup.then(
      (principal) => {
        if (!principal) return done(new UnauthenticatedError('Invalid credentials.'));
        principals.set(request, principal);
        done();
      },
      (err: Error) => done(err),
    );
  });
  const principalOf = (request: FastifyRequest): Principal | null => principals.get(request) ?? null;

  const formatFor = (request: FastifyRequest, suffix: Format | undefined): Format =>
    negotiate(request.headers.accept, suffix ? [suffix] : OUTPUT_FORMATS);

  const rawQuery = (request: FastifyRequest): string => {
    const url = request.raw.url ?? '';
    const q = url.indexOf('?');
    return q < 0 ? '' : url.slice(q + 1);
  };

  const notAllowed = (allow: readonly string[]) => async () => {
    throw new MethodNotAllowedError(allow);
  };

  for (const resource of registry.resources) {
    const has = (op: OperationName) => resource.operations.has(op);
    const etagsOf = (item: Item) =>
      OUTPUT_FORMATS.map((format) => etagOf(normalizeItem(registry, resource, item, format, 'get')));

    // Collection: /api/x, /api/x.jsonld, /api/x.json
    const collectionAllow: HTTPMethods[] = (['getCollection', 'post'] as const)
      .filter(has)
      .map((op) => OPERATION_METHOD[op]);
    for (const [path, suffix] of [
      [resource.path, undefined],
      ...Object.entries(SUFFIX_FORMATS).map(([s, f]) => [`${resource.path}.${s}`, f]),
    ] as [string, Format | undefined][]) {
      if (has('getCollection')) {
        app.get(path, async (request, reply) => collection(resource, request, reply, suffix));
      }
      if (has('post')) {
        app.post(path, async (request, reply) => {
          const principal = principalOf(request);
          const format = formatFor(request, suffix);
          const item = await engine.post(resource, () => jsonBody(request, WRITE_TYPES), principal);
          // A resource that is not persisted answers with what it computed: 200, nothing was created.
          if (!resource.persisted)
            return sendJson(
              request,
              reply,
              200,
              CONTENT_TYPE[format],
              normalizeItem(registry, resource, item, format, 'post'),
            );
          const iri = `${resource.path}/${item.id}`;
          await options.onWrite?.({ request, resource, operation: 'post', item });
          reply.header('location', iri).header('content-location', iri);
          return sendJson(
            request,
            reply,
            201,
            CONTENT_TYPE[format],
            normalizeItem(registry, resource, item, format, 'post'),
          );
        });
      }
      const others = ALL_METHODS.filter((m) => !collectionAllow.includes(m) && !(m === 'HEAD' && has('getCollection')));
      if (others.length && collectionAllow.length)
        app.route({ method: [...others], url: path, handler: notAllowed(collectionAllow) });
    }

    // Item: /api/x/:id (the id may carry a format suffix)
    if (!resource.hasItemOperations) continue;
    const itemPath = `${resource.path}/:id`;
    const itemAllow: HTTPMethods[] = (['get', 'put', 'patch', 'delete'] as const)
      .filter(has)
      .map((op) => OPERATION_METHOD[op]);
    const itemHeaders = (reply: FastifyReply, id: number) => {
      reply.header('content-location', `${resource.path}/${id}`);
      if (has('patch')) reply.header('accept-patch', 'application/merge-patch+json');
    };
    if (has('get')) {
      app.get(itemPath, async (request, reply) => {
        const { base, format: suffix } = splitSuffix((request.params as { id: string }).id);
        const principal = principalOf(request);
        const format = formatFor(request, suffix);
        const item = await engine.get(resource, base, principal);
        itemHeaders(reply, item.id);
        const selected = selectedProperties(resource, parseQuery(rawQuery(request)));
        return sendRead(
          request,
          reply,
          resource,
          [item],
          false,
          format,
          normalizeItem(registry, resource, item, format, 'get', false, selected),
        );
      });
    }
    for (const op of ['put', 'patch'] as const) {
      if (!has(op)) continue;
      app.route({
        method: OPERATION_METHOD[op],
        url: itemPath,
        handler: async (request, reply) => {
          const { base, format: suffix } = splitSuffix((request.params as { id: string }).id);
          const principal = principalOf(request);
          const format = formatFor(request, suffix);
          const item = await engine.replace(
            resource,
            op,
            base,
            () => jsonBody(request, op === 'patch' ? PATCH_TYPES : WRITE_TYPES),
            principal,
            ifMatch(request, etagsOf),
          );
          itemHeaders(reply, item.id);
          await options.onWrite?.({ request, resource, operation: op, item });
          return sendJson(
            request,
            reply,
            200,
            CONTENT_TYPE[format],
            normalizeItem(registry, resource, item, format, op),
          );
        },
      });
    }
    if (has('delete')) {
      app.delete(itemPath, async (request, reply) => {
        const { base } = splitSuffix((request.params as { id: string }).id);
        const principal = principalOf(request);
        const item = await engine.delete(resource, base, principal, ifMatch(request, etagsOf));
        await options.onWrite?.({ request, resource, operation: 'delete', item });
        return reply.code(204).send();
      });
    }
    const others = ALL_METHODS.filter((m) => !itemAllow.includes(m) && !(m === 'HEAD' && has('get')));
    if (others.length) app.route({ method: [...others], url: itemPath, handler: notAllowed(itemAllow) });
  }

  for (const resource of registry.resources) {
    for (const link of resource.links) registerSubresource(resource, link);
  }

  /** `/api/users/{id}/immobilies`: the collection limited to one parent; GET only, as in API Platform. */
  function registerSubresource(resource: ResourceMetadata, link: LinkMetadata) {
    const path = link.path.replace('{id}', ':parentId');
    app.get(path, async (request, reply) => {
      const raw = (request.params as { parentId: string }).parentId;
      return collection(resource, request, reply, undefined, { link, rawId: raw });
    });
    const others = ALL_METHODS.filter((m) => m !== 'GET' && m !== 'HEAD');
    app.route({ method: [...others], url: path, handler: notAllowed(['GET']) });
  }

  async function collection(
    resource: ResourceMetadata,
    request: FastifyRequest,
    reply: FastifyReply,
    suffix: Format | undefined,
    parent?: ParentSelection,
  ) {
    const principal = principalOf(request);
    const format = formatFor(request, suffix);
    const query = parseQuery(rawQuery(request));
    const result = await engine.getCollection(resource, query, principal, parent);
    const path = (request.raw.url ?? resource.path).split('?')[0] as string;
    const body = normalizeCollection(
      registry,
      resource,
      {
        ...result,
        requestPath: path,
        query,
        pageParameter: options.pageParameter,
        selected: selectedProperties(resource, query),
        collectionPath: parent ? link(parent) : undefined,
      },
      format,
      options.hydraPrefix,
    );
    return sendRead(request, reply, resource, result.items, true, format, body);
  }

  const link = (parent: ParentSelection): string => parent.link.path.replace('{id}', parent.rawId);

  // Entrypoint and contexts are JSON-LD documents only.
  const entrypoint = async (request: FastifyRequest, reply: FastifyReply) => {
    // A browser on the entrypoint gets the interactive documentation, as in API Platform.
    if (prefersHtml(request.headers.accept)) return reply.redirect(`${registry.prefix}/docs.html`, 302);
    negotiate(request.headers.accept, ['jsonld']);
    return sendJson(request, reply, 200, CONTENT_TYPE.jsonld, entrypointDocument(registry));
  };
  for (const path of [
    registry.prefix,
    `${registry.prefix}/index`,
    `${registry.prefix}/index.jsonld`,
    `${registry.prefix}.jsonld`,
  ]) {
    app.get(path, entrypoint);
  }
  app.get(`${registry.prefix}/contexts/:name`, async (request, reply) => {
    const raw = (request.params as { name: string }).name;
    const name = raw.endsWith('.jsonld') ? raw.slice(0, -'.jsonld'.length) : raw;
    const doc = contextDocument(registry, name, docsUrl(request, options));
    if (!doc) throw new NotFoundError();
    negotiate(request.headers.accept, ['jsonld']);
    return sendJson(request, reply, 200, CONTENT_TYPE.jsonld, doc);
  });
}
