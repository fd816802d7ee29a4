import { setFlagsFromString } from 'node:v8';

/**
 * V8's garbage collector, tuned for a server that answers requests (docs/decisions/0056). The first
 * import of every entry point (`src/main.ts`, each service's `main.ts`, `src/cli.ts`); the bundle's
 * start (`scripts/build-once.mjs`) imports it before the bundle, whose chunks esbuild orders itself.
 *
 * Allocation-site pretenuring is off. With it on, V8 decides after a few hundred allocations
 * that an object literal or array literal in the code makes long-lived objects, and from then
 * on allocates its objects straight into the old generation. In a request handler that decision
 * misfires: a per-request object from such a site (an MCP answer `{ status, json }`, the state of
 * Node's `once` wrapper on a request) lives in the old generation after its request ended, and
 * the young objects it points to (the answer's JSON, the request itself) are copied through every
 * young collection until the next full one. A fifth of what each MCP `tools/call` or each POST
 * allocated was copied twice, and the young collections took four to eight times as long as
 * REST's. Without pretenuring, an object only reaches the old generation by surviving two young
 * collections, which request objects do not.
 */
const PRETENURING_OFF = '--no-allocation-site-pretenuring';

setFlagsFromString(PRETENURING_OFF);
