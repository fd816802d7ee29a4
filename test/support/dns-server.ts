import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket, { type Answer, type Packet } from 'dns-packet';

/**
 * A real DNS server on 127.0.0.1 for the suites: UDP, and TCP on the same port for answers too
 * big for a datagram (the resolver retries over TCP when an answer comes back truncated). It
 * answers from the records a test sets, authoritatively: NXDOMAIN for a name without records,
 * an empty answer for a name without records of the type asked, SERVFAIL for names set to fail.
 */

export type TestRecord =
  { type: 'MX'; priority: number; exchange: string } | { type: 'TXT'; value: string } | { type: 'A'; address: string };

export interface TestDnsServer {
  readonly port: number;
  /** `127.0.0.1:<port>`, for INBOX_DNS_SERVERS and createDnsResolver. */
  readonly address: string;
  /** Adds records at `name` (case-insensitive, no trailing dot). */
  add(name: string, ...records: TestRecord[]): void;
  /** Removes the records at `name` (of `type`, or all). */
  remove(name: string, type?: TestRecord['type']): void;
  /** Answers SERVFAIL for `name` until `remove(name)`. */
  fail(name: string): void;
  clear(): void;
  /** Every question asked, with the transport it came over. */
  readonly queries: { name: string; type: string; transport: 'udp' | 'tcp' }[];
  close(): Promise<void>;
}

const NXDOMAIN = 3;
const SERVFAIL = 2;
const TRUNCATED = 1 << 9;

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

/** A TXT value as character-strings of at most 255 bytes. */
function chunks(value: string): Buffer[] {
  const bytes = Buffer.from(value, 'utf8');
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 255) out.push(bytes.subarray(i, i + 255));
  return out.length ? out : [Buffer.alloc(0)];
}

/**
 * Binds UDP and TCP to one free port. The system picks a free TCP port; the same number can be
 * taken for UDP by then (and the other way round), so it asks again a bounded number of times.
 */
async function listenOnOnePort(udp: dgram.Socket, tcp: net.Server): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(0, '127.0.0.1', () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    const port = (tcp.address() as net.AddressInfo).port;
    try {
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(port, '127.0.0.1', () => {
          udp.off('error', reject);
          resolve();
        });
      });
      return port;
    } catch (error) {
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 20) throw error;
    }
  }
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, TestRecord[]>();
  const failing = new Set<string>();
  const queries: TestDnsServer['queries'] = [];

  function answer(query: Packet, transport: 'udp' | 'tcp'): Buffer {
    const question = query.questions?.[0];
    const base = { type: 'response' as const, id: query.id ?? 0, questions: query.questions ?? [] };
    if (!question) return dnsPacket.encode({ ...base, flags: dnsPacket.AUTHORITATIVE_ANSWER | SERVFAIL });
    queries.push({ name: key(question.name), type: question.type, transport });
    const name = key(question.name);
    if (failing.has(name))
      return dnsPacket.encode({
        ...base,
        flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | SERVFAIL,
      });
    const records = zone.get(name);
    const flags = dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE;
    if (!records?.length) return dnsPacket.encode({ ...base, flags: flags | NXDOMAIN });
    const answers: Answer[] = [];
    for (const r of records) {
      if (r.type !== question.type) continue;
      if (r.type === 'MX')
        answers.push({
          type: 'MX',
          name: question.name,
          ttl: 60,
          class: 'IN',
          data: { preference: r.priority, exchange: r.exchange },
        });
      else if (r.type === 'TXT')
        answers.push({ type: 'TXT', name: question.name, ttl: 60, class: 'IN', data: chunks(r.value) });
      else answers.push({ type: 'A', name: question.name, ttl: 60, class: 'IN', data: r.address });
    }
    const full = dnsPacket.encode({ ...base, flags, answers });
    if (transport === 'tcp') return full;
    // Without EDNS a datagram holds 512 bytes; with it, what the client announced.
    const opt = query.additionals?.find((a) => a.type === 'OPT') as { udpPayloadSize?: number } | undefined;
    const limit = Math.max(512, opt?.udpPayloadSize ?? 512);
    return full.length <= limit ? full : dnsPacket.encode({ ...base, flags: flags | TRUNCATED });
  }

  const udp = dgram.createSocket('udp4');
  udp.on('message', (msg, rinfo) => {
    let query: Packet;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    udp.send(answer(query, 'udp'), rinfo.port, rinfo.address);
  });

  const tcp = net.createServer((socket) => {
    let buffered = Buffer.alloc(0);
    socket.on('data', (data) => {
      buffered = Buffer.concat([buffered, data]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const msg = buffered.subarray(2, 2 + length);
        buffered = buffered.subarray(2 + length);
        let query: Packet;
        try {
          query = dnsPacket.decode(msg);
        } catch {
          socket.destroy();
          return;
        }
        const reply = answer(query, 'tcp');
        const prefix = Buffer.alloc(2);
        prefix.writeUInt16BE(reply.length);
        socket.write(Buffer.concat([prefix, reply]));
      }
    });
    socket.on('error', () => socket.destroy());
  });
  const port = await listenOnOnePort(udp, tcp);

  return {
    port,
    address: `127.0.0.1:${port}`,
    queries,
    add(name, ...records) {
      zone.set(key(name), [...(zone.get(key(name)) ?? []), ...records]);
    },
    remove(name, type) {
      failing.delete(key(name));
      if (type === undefined) zone.delete(key(name));
      else
        zone.set(
          key(name),
          (zone.get(key(name)) ?? []).filter((r) => r.type !== type),
        );
    },
    fail(name) {
      failing.add(key(name));
    },
    clear() {
      zone.clear();
      failing.clear();
      queries.length = 0;
    },
    async close() {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    },
  };
}
