/**
 * Bundles the property service's admin (`src/property/admin/ui/`, API Platform's
 * `@api-platform/admin` with react-admin and MUI) into `dist/admin/` with esbuild
 * (`npm run build:admin`, part of `npm run build`). The property service serves these files at
 * `/admin`; nothing is fetched from a CDN at run time. esbuild runs without its install script: its
 * binary comes in the platform package (`@esbuild/linux-x64`, …) npm installs as an optional
 * dependency, so `allowScripts.esbuild` stays `false`.
 */
import { build } from 'esbuild';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PAGE_MANIFEST, type PageManifest } from '../src/platform/http/page-bundle.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const ADMIN_ENTRY = join(root, 'src/property/admin/ui/main.tsx');
export const ADMIN_OUT_DIR = join(root, 'dist/admin');

/** Bundles the admin into `outDir` (emptied first) and writes its manifest; returns the manifest. */
export function buildAdmin(outDir: string = ADMIN_OUT_DIR): Promise<PageManifest> {
  return bundlePage('admin', ADMIN_ENTRY, outDir);
}

/**
 * Bundles a browser page (`entry`, its CSS imports included) into `outDir/assets` with content-hashed
 * names, emptying `outDir` first, and writes the manifest the services read (platform/http/page-bundle.ts).
 */
export async function bundlePage(name: string, entryFile: string, outDir: string): Promise<PageManifest> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const result = await build({
    entryPoints: { [name]: entryFile },
    outdir: join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome111', 'firefox111', 'safari16.4'],
    jsx: 'automatic',
    minify: true,
    sourcemap: 'linked',
    legalComments: 'linked',
    // Production React and react-admin (no dev warnings; the telemetry ping is also off by prop).
    define: { 'process.env.NODE_ENV': '"production"' },
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.entries(result.metafile.outputs);
  const entry = outputs.find(([, output]) => output.entryPoint !== undefined);
  if (!entry) throw new Error('esbuild produced no entry output');
  const [script, output] = entry;
  const manifest: PageManifest = {
    script: basename(script),
    stylesheet: output.cssBundle ? basename(output.cssBundle) : undefined,
    files: outputs.map(([file]) => basename(file)).sort(),
  };
  writeFileSync(join(outDir, PAGE_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const manifest = await buildAdmin();
  // stderr: `npm run cli` builds first, and its stdout carries what the command prints (a new key).
  process.stderr.write(`admin bundled into ${ADMIN_OUT_DIR}: ${manifest.files.join(', ')}\n`);
}
