#!/usr/bin/env node
/**
 * `npx agentmail-mcp` from a checkout (the package's `bin`): the stdio MCP bridge, i.e.
 * `npm run cli -- mcp [--url URL] [--tools NAMES]` without npm's banner on stdout, which a stdio
 * MCP client would read as protocol. Builds first when the sources changed (scripts/build-once.mjs).
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const buildOnce = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../scripts/build-once.mjs');
process.argv = [process.argv[0], buildOnce, 'run', 'bundle/cli.js', 'mcp', ...process.argv.slice(2)];
await import(pathToFileURL(buildOnce).href);
