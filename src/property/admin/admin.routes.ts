import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError, NotFoundError } from '../../platform/errors/app-error.js';
import { escapeHtml, SWAGGER_UI_CSP } from '../../platform/http/swagger-ui.js';
import { distDir, readPageBundle } from '../../platform/http/page-bundle.js';

export interface AdminRouteOptions {
  /** Where the admin is served, e.g. `/admin`. */
  readonly path: string;
  /** The API the admin talks to (the Hydra entrypoint path, e.g. `/api`). */
  readonly entrypoint: string;
  readonly title: string;
  /** The built admin (`npm run build:admin`); `dist/admin` of this package by default. */
  readonly directory?: string | undefined;
}

/**
 * `/admin`: API Platform's admin (`@api-platform/admin`), bundled at build time and served from
 * local files under the same strict CSP as the docs page (scripts, styles and requests only from
 * this origin). The page is the same for every URL of the admin: react-admin routes in the hash.
 */
export function registerAdminRoutes(app: FastifyInstance, options: AdminRouteOptions): void {
  const directory = options.directory ?? distDir('admin');
  const assetsPath = `${options.path}/assets`;
  let build: ReturnType<typeof readPageBundle>;
  const current = () => {
    build ??= readPageBundle(directory);
    if (!build) {
      throw new AppError(
        'unavailable',
        'The admin has not been built: run "npm run build" (or "npm run build:admin") and reload.',
        { code: 'ADMIN_NOT_BUILT' },
      );
    }
    return build;
  };

  const page = async (_request: unknown, reply: FastifyReply) => {
    const { manifest } = current();
    return reply
      .code(200)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', SWAGGER_UI_CSP)
      .header('cache-control', 'no-cache')
      .send(
        adminHtml({
          title: options.title,
          entrypoint: options.entrypoint,
          script: `${assetsPath}/${manifest.script}`,
          stylesheet: manifest.stylesheet && `${assetsPath}/${manifest.stylesheet}`,
        }),
      );
  };
  app.get(options.path, page);
  app.get(`${options.path}/`, page);
  app.get(`${assetsPath}/:asset`, async (request, reply) => {
    const asset = current().asset((request.params as { asset: string }).asset);
    if (!asset) throw new NotFoundError();
    // File names carry a content hash: a changed bundle has new names.
    return reply
      .code(200)
      .header('content-type', asset.contentType)
      .header('cache-control', 'public, max-age=31536000, immutable')
      .send(asset.body);
  });
}

function adminHtml(page: {
  title: string;
  entrypoint: string;
  script: string;
  stylesheet?: string | undefined;
}): string {
  return `<!DOCTYPE html>
<html lang="de">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(page.title)} – Admin</title>
  <link rel="icon" href="data:,">
${page.stylesheet ? `  <link rel="stylesheet" href="${escapeHtml(page.stylesheet)}">\n` : ''}</head>
<body>
  <div id="root" data-entrypoint="${escapeHtml(page.entrypoint)}" data-title="${escapeHtml(page.title)}"></div>
  <script type="module" src="${escapeHtml(page.script)}"></script>
</body>
</html>
`;
}
