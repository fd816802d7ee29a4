/**
 * Bundles the services' entry points into `dist/bundle/` with esbuild (`npm run build:bundle`,
 * part of `npm run build`): what `npm start`, `npm run start:*` and `npm run cli` run.
 *
 * Why (issue 13, item 18; decision 0021): Node's ESM loader resolves, reads and compiles every
 * module file separately, and `kysely` and `typebox` alone are about 640 files. Bundled, a start
 * loads a few dozen files. Our code, kysely and typebox go into the bundle; every other runtime
 * dependency stays an ordinary `import` of `node_modules` (CommonJS packages, native addons,
 * packages that find their own files on disk), so the bundle holds no second copy of them.
 *
 * The worker threads' task modules are entries of their own, flat beside the chunks: `taskModule`
 * finds them next to the chunk that starts the pool, as it finds them next to the source module.
 * `dist/src/` (tsc's output) stays for the benchmarks that import single modules.
 */
import { build } from 'esbuild';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const BUNDLE_OUT_DIR = join(root, 'dist/bundle');

/** Packages of many small ES modules, bundled; every other dependency is imported from node_modules. */
const INLINED = new Set(['kysely', 'typebox']);

export const BUNDLE_ENTRIES: Record<string, string> = {
  main: 'src/main.ts',
  cli: 'src/cli.ts',
  'inbox-main': 'src/inbox/main.ts',
  'property-main': 'src/property/main.ts',
  'inbox.tasks': 'src/inbox/inbox.tasks.ts',
  'sqlite-checkpoint.tasks': 'src/platform/db/sqlite-checkpoint.tasks.ts',
};

export async function buildBundle(outDir: string = BUNDLE_OUT_DIR): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const external = Object.keys(dependencies)
    .filter((name) => !INLINED.has(name))
    .flatMap((name) => [name, `${name}/*`]);
  await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(Object.entries(BUNDLE_ENTRIES).map(([name, file]) => [name, join(root, file)])),
    outdir: outDir,
    chunkNames: 'chunk-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external,
    sourcemap: 'linked',
    logLevel: 'warning',
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await buildBundle();
  // stderr, as the admin's build: `npm run cli` may build first, and its stdout carries a new key.
  process.stderr.write(`services bundled into ${BUNDLE_OUT_DIR}\n`);
}
