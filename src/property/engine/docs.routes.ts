import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
// yaml loads with the first YAML document asked for, not at start.
const loadYaml = async () => (await import('yaml')).stringify;
import { AppError, NotFoundError } from '../../platform/errors/app-error.js';
import { SWAGGER_UI_CSP, swaggerUiAsset, swaggerUiHtml } from '../../platform/http/swagger-ui.js';
import { CONTENT_TYPE, docsUrl, sendJson, type HttpSettings } from './http.js';
import { hydraDocumentation } from './hydra-docs.js';
import { openApiDocument, type OpenApiOptions } from './openapi.js';
import type { Registry } from './registry.js';

export interface DocsRouteOptions extends HttpSettings {
  readonly registry: Registry;
  readonly maximumItemsPerPage: number;
  /** Client pagination switches, so that OpenAPI lists the parameters the engine accepts. */
  readonly clientPagination?: Pick<OpenApiOptions, 'clientEnabled' | 'clientPartial' | 'unpaginatedMaximum'>;
}

type DocsFormat = 'jsonld' | 'json' | 'jsonopenapi' | 'yaml' | 'yamlopenapi' | 'html';
/** API Platform's documentation formats: the OpenAPI document also as YAML (`docs.yaml`, `docs.yamlopenapi`). */
const DOCS_MIME: Readonly<Record<DocsFormat, string>> = {
  jsonld: 'application/ld+json',
  json: 'application/json',
  jsonopenapi: 'application/vnd.openapi+json',
  yaml: 'application/x-yaml',
  yamlopenapi: 'application/vnd.openapi+yaml',
  html: 'text/html',
};
const ALL_DOCS_FORMATS: readonly DocsFormat[] = ['jsonld', 'json', 'jsonopenapi', 'yaml', 'yamlopenapi', 'html'];

/** Picks a docs format from Accept among `candidates` (first wins for wildcards), else 406. */
function negotiateDocs(accept: string | undefined, candidates: readonly DocsFormat[]): DocsFormat {
  if (!accept?.trim()) return candidates[0] as DocsFormat;
  const ranges = accept
    .split(',')
    .map((part, order) => {
      const [range = '', ...params] = part.trim().split(';');
      const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      const q = qParam ? Number(qParam.slice(2)) : 1;
      return { range: range.trim().toLowerCase(), q: Number.isFinite(q) ? q : 0, order };
    })
    .filter((r) => r.q > 0)
    .sort(
      (a, b) => b.q - a.q || (a.range.includes('*') ? 1 : 0) - (b.range.includes('*') ? 1 : 0) || a.order - b.order,
    );
  for (const { range } of ranges) {
    const [type, subtype] = range.split('/');
    const found = candidates.find((c) => {
      const [ct, cs] = DOCS_MIME[c].split('/');
      return (type === '*' && subtype === '*') || (type === ct && (subtype === '*' || subtype === cs));
    });
    if (found) return found;
  }
  throw new AppError(
    'not_acceptable',
    `Requested format "${ranges[0]?.range ?? accept}" is not supported. Supported MIME types are ${candidates.map((c) => `"${DOCS_MIME[c]}"`).join(', ')}.`,
  );
}

/**
 * The documentation routes: Hydra (`docs.jsonld`), OpenAPI (`docs.json`, `docs.jsonopenapi`),
 * Swagger UI (`docs.html`, assets from the local swagger-ui-dist package) and `docs` negotiated.
 * The documents depend on the absolute docs URL, so they are cached per URL.
 */
export function registerDocsRoutes(app: FastifyInstance, options: DocsRouteOptions): void {
  const { registry } = options;
  const prefix = registry.prefix;
  const hydraCache = new Map<string, object>();
  let openApi: object | undefined;
  let openApiYaml: string | undefined;
  const assetsPath = `${prefix}/docs/ui`;

  const send = async (request: FastifyRequest, reply: FastifyReply, format: DocsFormat) => {
    switch (format) {
      case 'jsonld': {
        const url = docsUrl(request, options);
        let doc = hydraCache.get(url);
        if (!doc) {
          doc = hydraDocumentation(registry, url);
          if (hydraCache.size > 100) hydraCache.clear();
          hydraCache.set(url, doc);
        }
        return sendJson(request, reply, 200, CONTENT_TYPE.jsonld, doc);
      }
      case 'json':
      case 'jsonopenapi':
        openApi ??= openApiDocument(registry, {
          maximumItemsPerPage: options.maximumItemsPerPage,
          ...options.clientPagination,
          unprocessableEntity: !options.hydraPrefix,
        });
        return sendJson(request, reply, 200, `${DOCS_MIME[format]}; charset=utf-8`, openApi);
      case 'yaml':
      case 'yamlopenapi':
        openApi ??= openApiDocument(registry, {
          maximumItemsPerPage: options.maximumItemsPerPage,
          ...options.clientPagination,
          unprocessableEntity: !options.hydraPrefix,
        });
        openApiYaml ??= (await loadYaml())(openApi, { aliasDuplicateObjects: false });
        return reply.code(200).header('content-type', `${DOCS_MIME[format]}; charset=utf-8`).send(openApiYaml);
      case 'html':
        reply.header('content-security-policy', SWAGGER_UI_CSP);
        return reply
          .code(200)
          .header('content-type', 'text/html; charset=utf-8')
          .send(swaggerUiHtml({ title: registry.title, openApiUrl: `${prefix}/docs.json`, assetsPath }));
    }
  };

  app.get(`${prefix}/docs`, async (request, reply) =>
    send(request, reply, negotiateDocs(request.headers.accept, ALL_DOCS_FORMATS)),
  );
  for (const format of ALL_DOCS_FORMATS) {
    app.get(`${prefix}/docs.${format}`, async (request, reply) =>
      send(request, reply, negotiateDocs(request.headers.accept, [format])),
    );
  }
  app.get(`${assetsPath}/:asset`, async (request, reply) => {
    const asset = swaggerUiAsset((request.params as { asset: string }).asset);
    if (!asset) throw new NotFoundError();
    return reply
      .code(200)
      .header('content-type', asset.contentType)
      .header('cache-control', 'public, max-age=86400')
      .send(asset.body);
  });
}

/** Whether a browser asks for a page (its most preferred range is text/html). */
export function prefersHtml(accept: string | undefined): boolean {
  return /^\s*text\/html\b/i.test(accept ?? '');
}
