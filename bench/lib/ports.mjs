import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * A free loopback port below the kernel's ephemeral range (ip_local_port_range), for a process
 * that must know its port before it starts (a server under load, a private Varnish, Redis or
 * Postfix). The kernel hands out ports of that range to every `listen(0)` and every outgoing
 * connection, so a port taken from it can be given to another test's server or a load
 * generator's socket between the check and the bind; one below it is taken only by a process
 * asking for that very port.
 */
export async function freePort() {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    // not Linux: keep the default range's start
  }
  const first = Math.max(1024, low - 12_000);
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = first + Math.floor(Math.random() * (low - first));
    if (await canListen(port)) return port;
  }
  throw new Error('no free port below the ephemeral range');
}

const canListen = (port) =>
  new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
