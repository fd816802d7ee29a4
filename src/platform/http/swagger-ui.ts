import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * Swagger UI for `/api/docs.html`, served from the installed `swagger-ui-dist` package: the docs
 * page must work on a machine without internet access and must not leak its visitors to a CDN.
 * The start-up code is a file of its own rather than an inline script, so the page runs under a
 * CSP without 'unsafe-inline' for scripts ({@link SWAGGER_UI_CSP}).
 */

export interface SwaggerUiAsset {
  readonly body: Buffer | string;
  readonly contentType: string;
}

export interface SwaggerUiPageOptions {
  readonly title: string;
  /** Where Swagger UI fetches the OpenAPI document (sent with `Accept: application/json`). */
  readonly openApiUrl: string;
  /** URL path under which {@link swaggerUiAsset} is served, without a trailing slash. */
  readonly assetsPath: string;
}

/**
 * A policy the page satisfies. Swagger UI sets inline style attributes and uses data: images in
 * its stylesheet, hence those two allowances; scripts and requests stay on our own origin.
 */
export const SWAGGER_UI_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Files of swagger-ui-dist the page loads; nothing else of the package is reachable. */
const DIST_FILES: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-16x16.png': 'image/png',
  'favicon-32x32.png': 'image/png',
};

// validatorUrl: null, because Swagger UI otherwise sends every spec URL to validator.swagger.io
// for its badge. The spec is asked for as application/json: /api/docs.json answers only that.
const INIT_SCRIPT = `'use strict';
window.addEventListener('load', function () {
  var root = document.getElementById('swagger-ui');
  var specUrl = new URL(root.getAttribute('data-openapi-url'), window.location.href).href;
  window.ui = SwaggerUIBundle({
    url: specUrl,
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
    requestInterceptor: function (request) {
      if (request.loadSpec) request.headers.Accept = 'application/json';
      return request;
    },
  });
});
`;

const cache = new Map<string, SwaggerUiAsset>();
let distDirectory: string | undefined;

function distDir(): string {
  distDirectory ??= dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  return distDirectory;
}

/** An asset of the docs page by file name (`swagger-ui.css`, `init.js`, …), or undefined. */
export function swaggerUiAsset(name: string): SwaggerUiAsset | undefined {
  const cached = cache.get(name);
  if (cached) return cached;
  let asset: SwaggerUiAsset | undefined;
  if (name === 'init.js') {
    asset = { body: INIT_SCRIPT, contentType: 'text/javascript; charset=utf-8' };
  } else if (Object.hasOwn(DIST_FILES, name)) {
    asset = { body: readFileSync(join(distDir(), name)), contentType: DIST_FILES[name] as string };
  }
  if (asset) cache.set(name, asset);
  return asset;
}

export function swaggerUiHtml(options: SwaggerUiPageOptions): string {
  const title = escapeHtml(options.title);
  const assets = escapeHtml(options.assetsPath);
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${title}</title>
  <link rel="stylesheet" href="${assets}/swagger-ui.css">
  <link rel="icon" type="image/png" href="${assets}/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="${assets}/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <div id="swagger-ui" data-openapi-url="${escapeHtml(options.openApiUrl)}"></div>
  <script src="${assets}/swagger-ui-bundle.js"></script>
  <script src="${assets}/swagger-ui-standalone-preset.js"></script>
  <script src="${assets}/init.js"></script>
</body>
</html>
`;
}

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
