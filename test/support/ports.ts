// @ts-expect-error -- a plain ES module shared with the benches, typed here
import * as shared from '../../bench/lib/ports.mjs';

/**
 * A free loopback port below the kernel's ephemeral range, for a process that must know its port
 * before it starts (bench/lib/ports.mjs): a port from that range can be handed to another test
 * file's `listen(0)` between the check and the bind, as happened to the private Varnish in CI.
 */
export const freePort = shared.freePort as () => Promise<number>;

/**
 * Binds with `listen` on a port from `freePort`, on another one when a process took it between the
 * check and the bind. For a server a test stops and starts again on the same port: a port from
 * the ephemeral range could meanwhile go to another test file's `listen(0)`, whose server would
 * then get the clients meant to find this one down (a relay's SMTP client waiting for a greeting
 * held an inbox server's close for 60 s this way).
 */
export async function listenOnFreePort(listen: (port: number) => Promise<void>): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      await listen(port);
      return port;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 10) throw err;
    }
  }
}
