/**
 * Bundles the inbox service's web console (`src/inbox/console/ui/`, plain TypeScript and CSS, no
 * framework) into `dist/console/` with esbuild (`npm run build:console`, part of `npm run build`).
 * The inbox service serves these files at `/console/`; nothing is fetched from another host.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { PageManifest } from '../src/platform/http/page-bundle.js';
import { bundlePage } from './build-admin.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const CONSOLE_ENTRY = join(root, 'src/inbox/console/ui/main.ts');
export const CONSOLE_OUT_DIR = join(root, 'dist/console');

export function buildConsole(outDir: string = CONSOLE_OUT_DIR): Promise<PageManifest> {
  return bundlePage('console', CONSOLE_ENTRY, outDir);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const manifest = await buildConsole();
  // stderr: `npm run cli` builds first, and its stdout carries what the command prints (a new key).
  process.stderr.write(`console bundled into ${CONSOLE_OUT_DIR}: ${manifest.files.join(', ')}\n`);
}
