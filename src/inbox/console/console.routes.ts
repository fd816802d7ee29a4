import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError, NotFoundError, UnauthenticatedError } from '../../platform/errors/app-error.js';
import { distDir, readPageBundle } from '../../platform/http/page-bundle.js';
import { escapeHtml } from '../../platform/http/swagger-ui.js';
import { permissionsToWire, type KeyOwner } from '../core/scope.js';
import { CONSOLE_COOKIE, cookieOf } from '../http/auth.js';
import type { InboxApp } from '../http/types.js';
import type { ConsoleSessions } from './console-session.service.js';

/**
 * The web console at `/console/` (issue 30; docs/decisions/0046-console-sessions.md): the page,
 * bundled at build time (`dist/console/`, no CDN), and its session routes. The page calls the
 * ordinary `/v0` API with the session cookie and the CSRF token (http/auth.ts `bearerAuth`), so it
 * sees and does exactly what its key may, through the same routes as every program.
 */

export const CONSOLE_PATH = '/console';

/**
 * The page's own policy: scripts, styles, requests and frames only from this origin. Images may
 * come from anywhere because a message's HTML, shown in a sandboxed frame, may show its remote
 * images once the person asks; until then the frame's own policy blocks them (ui/).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: https: http:",
  "connect-src 'self' ws: wss:",
  "frame-src 'self' blob: about:",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SignInBody = Type.Object({ api_key: Type.String({ minLength: 1, maxLength: 200 }) });

const SessionResponse = Type.Object({
  csrf_token: Type.String(),
  expires_at: Type.String({ format: 'date-time' }),
  organization_id: Type.String(),
  pod_id: Type.Optional(Type.String()),
  inbox_id: Type.Optional(Type.String()),
  permissions: Type.Optional(Type.Record(Type.String(), Type.Boolean())),
});

function sessionBody(s: { owner: KeyOwner; csrfToken: string; expiresAt: string }) {
  return {
    csrf_token: s.csrfToken,
    expires_at: s.expiresAt,
    organization_id: s.owner.organizationId,
    ...(s.owner.podId !== undefined ? { pod_id: s.owner.podId } : {}),
    ...(s.owner.inboxId !== undefined ? { inbox_id: s.owner.inboxId } : {}),
    ...(s.owner.permissions !== undefined ? { permissions: permissionsToWire(s.owner.permissions) } : {}),
  };
}

/** HttpOnly (no script reads it), SameSite=Strict (no other site sends it), Secure behind TLS. */
function cookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  return [
    `${CONSOLE_COOKIE}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${maxAgeSeconds}`,
    ...(request.protocol === 'https' ? ['Secure'] : []),
  ].join('; ');
}

export function consoleRoutes(app: InboxApp, sessions: ConsoleSessions, options: { directory?: string } = {}): void {
  const tags = ['console'];
  const directory = options.directory ?? distDir('console');
  let bundle: ReturnType<typeof readPageBundle>;
  const current = () => {
    bundle ??= readPageBundle(directory);
    if (!bundle)
      throw new AppError('unavailable', 'The console has not been built: run "npm run build" and reload.', {
        code: 'CONSOLE_NOT_BUILT',
      });
    return bundle;
  };

  app.post(`${CONSOLE_PATH}/session`, {
    config: { public: true },
    schema: {
      tags,
      hide: true,
      summary: 'Sign in to the web console with an API key: a session cookie and its CSRF token',
      body: SignInBody,
      response: { 200: SessionResponse, 401: Type.Ref('ErrorResponse'), 429: Type.Ref('ErrorResponse') },
    },
    handler: async (request, reply) => {
      let session: Awaited<ReturnType<ConsoleSessions['signIn']>>;
      try {
        session = await sessions.signIn(request.body.api_key, request.ip);
      } catch (err) {
        // Who tried and what came of it, never what was typed (the key or a near miss of one).
        if (err instanceof AppError && (err.kind === 'unauthenticated' || err.kind === 'rate_limited'))
          request.log.warn(
            { client: request.ip, code: err.code, attempts_left: err.details.sign_in_attempts_left },
            err.kind === 'rate_limited'
              ? 'console sign-in refused: too many failures from this address'
              : 'console sign-in failed',
          );
        throw err;
      }
      const seconds = Math.max(1, Math.round((Date.parse(session.expiresAt) - Date.now()) / 1000));
      void reply.header('set-cookie', cookie(request, session.token, seconds)).header('cache-control', 'no-store');
      return sessionBody(session);
    },
  });

  app.get(`${CONSOLE_PATH}/session`, {
    config: { public: true },
    schema: {
      tags,
      hide: true,
      summary: "The console session's CSRF token, expiry and scope",
      response: { 200: SessionResponse },
    },
    handler: async (request, reply) => {
      const token = cookieOf(request.headers.cookie, CONSOLE_COOKIE);
      const session = token === undefined ? undefined : await sessions.find(token);
      if (!session) throw new UnauthenticatedError('Not signed in to the console.', { code: 'NO_CONSOLE_SESSION' });
      void reply.header('cache-control', 'no-store');
      return sessionBody(session);
    },
  });

  app.delete(`${CONSOLE_PATH}/session`, {
    config: { public: true },
    schema: { tags, hide: true, summary: 'Sign out of the web console (the session ends on the server)' },
    handler: async (request, reply) => {
      const token = cookieOf(request.headers.cookie, CONSOLE_COOKIE);
      if (token !== undefined) {
        const csrf = request.headers['x-csrf-token'];
        // Only the page itself may end its session: a cross-site request has the cookie, not the token.
        const session = await sessions.find(token);
        if (session && session.csrfToken !== (Array.isArray(csrf) ? csrf[0] : csrf))
          throw new UnauthenticatedError('Sign-out needs the CSRF token (X-CSRF-Token).', {
            code: 'CSRF_TOKEN_MISMATCH',
          });
        await sessions.signOut(token);
      }
      return reply
        .header('set-cookie', cookie(request, '', 0))
        .code(204)
        .send();
    },
  });

  const page = async (_request: FastifyRequest, reply: FastifyReply) => {
    const { manifest } = current();
    return reply
      .code(200)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(
        consoleHtml(
          `${CONSOLE_PATH}/assets/${manifest.script}`,
          manifest.stylesheet && `${CONSOLE_PATH}/assets/${manifest.stylesheet}`,
        ),
      );
  };
  app.get(CONSOLE_PATH, { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
    reply.redirect(`${CONSOLE_PATH}/`),
  );
  app.get(`${CONSOLE_PATH}/`, { config: { public: true }, schema: { hide: true } }, page);
  app.get(
    `${CONSOLE_PATH}/assets/:asset`,
    { config: { public: true }, schema: { hide: true } },
    async (request, reply) => {
      const asset = current().asset((request.params as { asset: string }).asset);
      if (!asset) throw new NotFoundError('No such console file.', { code: 'ASSET_NOT_FOUND' });
      // Names carry a content hash: a changed bundle has new names.
      return reply
        .code(200)
        .header('content-type', asset.contentType)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .send(asset.body);
    },
  );
}

function consoleHtml(script: string, stylesheet: string | undefined): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Inbox console</title>
  <link rel="icon" href="data:,">
${stylesheet ? `  <link rel="stylesheet" href="${escapeHtml(stylesheet)}">\n` : ''}  <script type="module" src="${escapeHtml(script)}"></script>
</head>
<body>
  <noscript>The console needs JavaScript.</noscript>
  <main id="app" aria-live="polite"></main>
</body>
</html>
`;
}
