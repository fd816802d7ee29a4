import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A browser page bundled at build time (`npm run build`: the property admin into `dist/admin/`, the
 * inbox console into `dist/console/`): a manifest naming the bundle's files, and the files
 * themselves. Only files the manifest lists are ever read, so no request path reaches the file system.
 */

export const PAGE_MANIFEST = 'manifest.json';

export interface PageManifest {
  /** The ES module that starts the page (file name under `assets/`). */
  readonly script: string;
  /** The stylesheet of the bundle, when it has one. */
  readonly stylesheet?: string | undefined;
  /** Every file under `assets/` (script, stylesheet, source maps, licences). */
  readonly files: readonly string[];
}

export interface PageAsset {
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

/** `dist/<name>` of the package this module belongs to (from `src/…` in tests, `dist/src/…` built). */
export function distDir(name: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above the page-bundle module');
    dir = parent;
  }
  return join(dir, 'dist', name);
}

/** Reads the bundle built in `dir`, or undefined when it has not been built. */
export function readPageBundle(
  dir: string,
): { manifest: PageManifest; asset(name: string): PageAsset | undefined } | undefined {
  const manifestPath = join(dir, PAGE_MANIFEST);
  if (!existsSync(manifestPath)) return undefined;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as PageManifest;
  const known = new Set(manifest.files);
  const cache = new Map<string, PageAsset>();
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
