import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The built admin (`npm run build:admin` → `dist/admin/`): a manifest naming the bundle's files,
 * and the files themselves. Only files the manifest lists are ever read, so no request path
 * reaches the file system.
 */

export const ADMIN_MANIFEST = 'manifest.json';

export interface AdminManifest {
  /** The ES module that starts the admin (file name under `assets/`). */
  readonly script: string;
  /** The stylesheet of the bundle, when it has one. */
  readonly stylesheet?: string | undefined;
  /** Every file under `assets/` (script, stylesheet, source maps, licences). */
  readonly files: readonly string[];
}

export interface AdminAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** `dist/admin` of the package this module belongs to (from `src/…` in tests, `dist/src/…` built). */
export function defaultAdminDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above the admin module');
    dir = parent;
  }
  return join(dir, 'dist', 'admin');
}

/** Reads the built admin in `dir`, or undefined when it has not been built. */
export function readAdminBuild(
  dir: string,
): { manifest: AdminManifest; asset(name: string): AdminAsset | undefined } | undefined {
  const manifestPath = join(dir, ADMIN_MANIFEST);
  if (!existsSync(manifestPath)) return undefined;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as AdminManifest;
  const known = new Set(manifest.files);
  const cache = new Map<string, AdminAsset>();
  return {
    manifest,
    asset(name) {
      if (!known.has(name)) return undefined;
      let asset = cache.get(name);
      if (!asset) {
        const ext = name.slice(name.lastIndexOf('.'));
        asset = {
          body: readFileSync(join(dir, 'assets', name)),
          contentType: CONTENT_TYPES[ext] ?? 'application/octet-stream',
        };
        cache.set(name, asset);
      }
      return asset;
    },
  };
}
