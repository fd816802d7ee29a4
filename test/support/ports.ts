// @ts-expect-error -- a plain ES module shared with the benches, typed here
import * as shared from '../../bench/lib/ports.mjs';

/**
 * A free loopback port below the kernel's ephemeral range, for a process that must know its port
 * before it starts (bench/lib/ports.mjs): a port from that range can be handed to another test
 * file's `listen(0)` between the check and the bind, as happened to the private Varnish in CI.
 */
export const freePort = shared.freePort as () => Promise<number>;
