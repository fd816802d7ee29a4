import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { clearTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import nodemailer from 'nodemailer';
import { prng } from './lib/prng.mjs';

/**
 * The SMTP load generator, run by bench/smtp-run.mjs in its own process on its own core. Argument:
 * a JSON object
 *   { host, port, sessions, warmup, duration (s), mode: 'reuse' | 'connect', client: 'raw' | 'nodemailer',
 *     size: 'small' | 'large', recipients: [address, …], maxMessages (per connection, nodemailer's pool) }.
 * `sessions` senders run in parallel, each sending one message after the other, with one
 * recipient each: `reuse` keeps each sender's connection for message after message (as MTAs do;
 * a 421 to MAIL, the server's per-connection limit, makes it reconnect and send that message
 * again), `connect` opens a new connection for every message (greeting, EHLO, one transaction,
 * QUIT). Prints `warm` when the warm-up is over, then one JSON line: messages per second of the
 * measured window, their latency, every 250 ever received (warm-up and tail included, for the
 * check against the stored rows), errors, and `cpu` (cores this process used).
 *
 * `raw` is a client over plain sockets: MAIL, RCPT and DATA go out in one write when the server
 * advertises PIPELINING (RFC 2920), then the message and its final dot in one more; two round
 * trips per message. `nodemailer` is nodemailer's SMTP transport (pooled for `reuse`), with the
 * message handed over as raw bytes and the envelope given, so that nothing is composed.
 *
 * Latency of a message: from MAIL FROM to the 250 after the final dot (`reuse`), from the
 * connect() to that 250 (`connect`: greeting delay included).
 */

const spec = JSON.parse(process.argv[2]);
const { host, port, sessions, warmup, duration, mode, client, size, recipients } = spec;
const REPLY_TIMEOUT_MS = 60_000;
const EHLO = 'mail-out-3.sender.example';

// ---------------------------------------------------------------------------------------------
// Messages: realistic headers, unique Message-IDs, 1 KiB of plain text or 1 MiB with attachments.

const RUN = randomBytes(6).toString('hex');
const random = prng(4242);
const SENDERS = [
  'Anna Becker <anna.becker@acme-logistics.example>',
  'Ben Fischer <ben.fischer@brightwave.example>',
  'Clara Costa <clara@nordlicht-energie.example>',
  'David Lange <d.lange@examplecorp.example>',
  'Elif Yilmaz <elif.yilmaz@quantum-retail.example>',
  'Felix Vogel <felix.vogel@kiefer-bau.example>',
];
const senderAddress = (from) => from.slice(from.indexOf('<') + 1, -1);
const DKIM_B = randomBytes(256).toString('base64');
const DKIM_BH = randomBytes(32).toString('base64');
const WORDS =
  'the order invoice delivery account please thanks attached update review confirm payment refund report missing tomorrow today warehouse tracking number contract price service settings'.split(
    ' ',
  );
const sentence = () => {
  const n = 8 + Math.floor(random() * 8);
  const words = Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]);
  return `${words[0][0].toUpperCase()}${words.join(' ').slice(1)}.`;
};
/** Lines of at most 72 characters, none starting with a dot (no dot-stuffing needed). */
function textOf(bytes) {
  const lines = [];
  let length = 0;
  let line = '';
  while (length < bytes) {
    const s = sentence();
    if (line.length + s.length + 1 > 72) {
      lines.push(line);
      length += line.length + 2;
      line = '';
    }
    line = line ? `${line} ${s}` : s;
  }
  return lines.join('\r\n');
}

const date = new Date().toUTCString().replace('GMT', '+0000');
let sequence = 0;

/** The header section of one message (CRLF-terminated lines, no empty line). */
function headers(n, to, from, reply, contentType) {
  const subject = reply ? `Re: ${reply.subject}` : `Order ${100000 + n}: delivery update and invoice`;
  const messageId = `<${RUN}.${String(n).padStart(9, '0')}@acme-logistics.example>`;
  const lines = [
    `Received: from relay-2.acme-logistics.example (relay-2.acme-logistics.example [192.0.2.25])\r\n\tby mail-out-3.sender.example (Postfix) with ESMTPS id 4Xk2f7${String(n).padStart(9, '0')}\r\n\tfor <${to}>; ${date}`,
    `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=acme-logistics.example; s=mail2026;\r\n\tt=1795000000; h=from:to:subject:date:message-id:mime-version:content-type;\r\n\tbh=${DKIM_BH};\r\n\tb=${DKIM_B.slice(0, 70)}\r\n\t ${DKIM_B.slice(70, 140)}\r\n\t ${DKIM_B.slice(140, 210)}\r\n\t ${DKIM_B.slice(210)}`,
    `From: ${from}`,
    `To: Support Agent <${to}>`,
    `Subject: ${subject}`,
    `Date: ${date}`,
    `Message-ID: ${messageId}`,
    ...(reply ? [`In-Reply-To: ${reply.messageId}`, `References: ${reply.messageId}`] : []),
    'MIME-Version: 1.0',
    `Content-Type: ${contentType}`,
    'X-Mailer: Acme Logistics Notifier 4.2',
  ];
  return { messageId, subject: reply ? reply.subject : subject, text: `${lines.join('\r\n')}\r\n` };
}

const SMALL_BYTES = 1024;
const smallText = textOf(2048);
/** 1 KiB: headers and a plain-text body cut to make 1,024 bytes with the final CRLF. */
function small(n, to, from, reply) {
  const h = headers(n, to, from, reply, 'text/plain; charset=utf-8');
  const room = SMALL_BYTES - Buffer.byteLength(h.text) - 2 - 2;
  const body = smallText
    .slice(0, Math.max(0, room))
    .replace(/\r?\n?$/, '')
    .replace(/\r$/, '');
  return { messageId: h.messageId, subject: h.subject, data: Buffer.from(`${h.text}\r\n${body}\r\n`) };
}

const LARGE_BYTES = 1024 * 1024;
const BOUNDARY = '----=_Part_5523_1931170421.1795000000000';
const ALT = '----=_Part_5524_207745131.1795000000000';
const largeText = textOf(1500);
const largeHtml = `<html><head><meta charset="utf-8"></head><body><div dir="ltr">${largeText
  .split('\r\n')
  .map((l) => `<p>${l}</p>`)
  .join('\r\n')}</div></body></html>`;
/** The body after the headers: text and HTML alternatives, then a PDF-like attachment filling 1 MiB. */
function largeBody(headerBytes) {
  const head = [
    'This is a multi-part message in MIME format.',
    '',
    `--${BOUNDARY}`,
    `Content-Type: multipart/alternative; boundary="${ALT}"`,
    '',
    `--${ALT}`,
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    largeText,
    '',
    `--${ALT}`,
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    largeHtml,
    '',
    `--${ALT}--`,
    '',
    `--${BOUNDARY}`,
    'Content-Type: application/pdf; name="invoice-2026-11.pdf"',
    'Content-Disposition: attachment; filename="invoice-2026-11.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    '',
  ].join('\r\n');
  const tail = `\r\n--${BOUNDARY}--\r\n`;
  // base64 in 76-character lines: 78 bytes on the wire for 57 bytes of content.
  const room = LARGE_BYTES - headerBytes - 2 - Buffer.byteLength(head) - Buffer.byteLength(tail);
  const binary = Buffer.alloc(Math.floor(room / 78) * 57);
  for (let i = 0; i < binary.length; i += 4)
    binary.writeUInt32LE((random() * 2 ** 32) >>> 0, Math.min(i, binary.length - 4));
  binary.write('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n', 0, 'latin1');
  binary.write('\n%%EOF\n', binary.length - 7, 'latin1');
  const encoded = binary.toString('base64').replace(/.{76}/g, '$&\r\n').replace(/\r\n$/, '');
  return Buffer.from(`${head}${encoded}${tail}`);
}
let largeRest;
function large(n, to, from, reply) {
  const h = headers(n, to, from, reply, `multipart/mixed; boundary="${BOUNDARY}"`);
  const head = Buffer.from(`${h.text}\r\n`);
  largeRest ??= largeBody(head.length);
  return { messageId: h.messageId, subject: h.subject, data: Buffer.concat([head, largeRest]) };
}

const makeMessage = size === 'large' ? large : small;

/**
 * Each sender's next message: recipients in turn, and every fourth message a reply (In-Reply-To,
 * References, `Re:`) to the last message this sender got stored in that inbox, as in a conversation.
 */
function nextMessage(sender) {
  const n = sequence++;
  const to = recipients[(sender.id + sender.count) % recipients.length];
  const from = SENDERS[sender.id % SENDERS.length];
  const previous = sender.count % 4 === 3 ? sender.lastByRecipient.get(to) : undefined;
  sender.count++;
  const m = makeMessage(n, to, from, previous);
  return { ...m, to, from: senderAddress(from) };
}

// ---------------------------------------------------------------------------------------------
// Counting.

let phase = 'warmup';
const counts = { ok: 0, window: 0, errors: 0, reconnects: 0, connections: 0, bytes: 0 };
const errorSamples = [];
const latencies = [];
function delivered(start, bytes) {
  counts.ok++;
  if (phase !== 'measure') return;
  counts.window++;
  counts.bytes += bytes;
  latencies.push(performance.now() - start);
}
function failed(what) {
  counts.errors++;
  if (errorSamples.length < 5) errorSamples.push(String(what).slice(0, 300));
}

// ---------------------------------------------------------------------------------------------
// The raw client.

class SmtpError extends Error {
  constructor(reply) {
    super(`${reply.code} ${reply.text}`);
    this.code = reply.code;
  }
}

/** One SMTP connection: replies in order, as {code, text}. */
class Connection {
  constructor(socket) {
    this.socket = socket;
    this.partial = '';
    this.lines = [];
    this.ready = [];
    this.waiting = [];
    this.closed = false;
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.read(chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      for (const w of this.waiting.splice(0)) w.reject(new Error('connection closed'));
    });
  }

  static open() {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port }, () => {
        socket.off('error', reject);
        resolve(new Connection(socket));
      });
      socket.once('error', reject);
    });
  }

  read(text) {
    this.partial += text;
    let i;
    while ((i = this.partial.indexOf('\r\n')) >= 0) {
      const line = this.partial.slice(0, i);
      this.partial = this.partial.slice(i + 2);
      this.lines.push(line);
      if (line[3] === '-') continue;
      const reply = { code: Number(line.slice(0, 3)), text: this.lines.join('\n') };
      this.lines = [];
      const w = this.waiting.shift();
      if (w) {
        clearTimeout(w.timer);
        w.resolve(reply);
      } else this.ready.push(reply);
    }
  }

  reply() {
    if (this.ready.length) return Promise.resolve(this.ready.shift());
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('reply timeout')), REPLY_TIMEOUT_MS);
      this.waiting.push({ resolve, reject, timer });
    });
  }

  async expect(code) {
    const r = await this.reply();
    if (r.code !== code) throw new SmtpError(r);
    return r;
  }

  write(...chunks) {
    if (chunks.length === 1) return this.socket.write(chunks[0]);
    this.socket.cork();
    for (const c of chunks) this.socket.write(c);
    this.socket.uncork();
  }

  close() {
    this.socket.destroy();
  }
}

/** Connects, waits for the greeting (talking first is refused), EHLO. */
async function openSession() {
  const c = await Connection.open();
  counts.connections++;
  await c.expect(220);
  c.write(`EHLO ${EHLO}\r\n`);
  const ehlo = await c.expect(250);
  c.pipelining = /^250[ -]PIPELINING\b/im.test(ehlo.text);
  return c;
}

/**
 * One mail transaction on an open session; resolves true on 250, 'reconnect' on a 421 to MAIL
 * (the per-connection limit), throws on anything else.
 */
async function transaction(c, m) {
  const envelope = [`MAIL FROM:<${m.from}> SIZE=${m.data.length}\r\n`, `RCPT TO:<${m.to}>\r\n`, 'DATA\r\n'];
  if (c.pipelining) {
    c.write(envelope.join(''));
    const mail = await c.reply();
    if (mail.code === 421) return 'reconnect';
    if (mail.code !== 250) throw new SmtpError(mail);
    await c.expect(250);
    await c.expect(354);
  } else {
    c.write(envelope[0]);
    const mail = await c.reply();
    if (mail.code === 421) return 'reconnect';
    if (mail.code !== 250) throw new SmtpError(mail);
    c.write(envelope[1]);
    await c.expect(250);
    c.write(envelope[2]);
    await c.expect(354);
  }
  // The generated messages end with CRLF and have no line starting with a dot.
  c.write(m.data, '.\r\n');
  await c.expect(250);
  return true;
}

async function rawSender(sender) {
  let c;
  let retry;
  while (phase !== 'stop' || retry) {
    const m = retry ?? nextMessage(sender);
    retry = undefined;
    const start = performance.now();
    try {
      if (mode === 'connect' || !c || c.closed) c = await openSession();
      const outcome = await transaction(c, m);
      if (outcome === 'reconnect') {
        counts.reconnects++;
        c.close();
        c = undefined;
        retry = m;
        continue;
      }
      delivered(start, m.data.length);
      sender.lastByRecipient.set(m.to, m);
      if (mode === 'connect') {
        // QUIT without waiting for its 221: the sender moves on, the server closes the connection.
        const done = c;
        done.write('QUIT\r\n');
        done.reply().then(
          () => done.close(),
          () => done.close(),
        );
        c = undefined;
      }
    } catch (err) {
      failed(err instanceof Error ? err.message : err);
      c?.close();
      c = undefined;
      await sleep(50);
    }
  }
  if (c && !c.closed) {
    c.write('QUIT\r\n');
    await c.reply().catch(() => undefined);
    c.close();
  }
}

// ---------------------------------------------------------------------------------------------
// nodemailer.

function nodemailerSenders() {
  const transport = nodemailer.createTransport({
    host,
    port,
    secure: false,
    ignoreTLS: true,
    name: EHLO,
    pool: mode === 'reuse',
    maxConnections: sessions,
    maxMessages: spec.maxMessages ?? 1000,
    socketTimeout: REPLY_TIMEOUT_MS,
  });
  async function sender(s) {
    while (phase !== 'stop') {
      const m = nextMessage(s);
      const start = performance.now();
      try {
        const info = await transport.sendMail({ envelope: { from: m.from, to: [m.to] }, raw: m.data });
        if (!/^250/.test(info.response)) throw new Error(info.response);
        delivered(start, m.data.length);
        s.lastByRecipient.set(m.to, m);
      } catch (err) {
        failed(err instanceof Error ? err.message : err);
        await sleep(50);
      }
    }
  }
  return { sender, close: () => transport.close() };
}

// ---------------------------------------------------------------------------------------------

const senders = Array.from({ length: sessions }, (_, id) => ({ id, count: 0, lastByRecipient: new Map() }));
const nm = client === 'nodemailer' ? nodemailerSenders() : undefined;
const running = senders.map((s) => (nm ? nm.sender(s) : rawSender(s)));

await sleep(warmup * 1000);
phase = 'measure';
process.stdout.write('warm\n');
const cpuBefore = process.cpuUsage();
const t0 = performance.now();
await sleep(duration * 1000);
phase = 'stop';
const elapsed = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpuBefore);
await Promise.all(running);
nm?.close();

latencies.sort((a, b) => a - b);
const at = (q) =>
  latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : NaN;
const summary = {
  rps: counts.window / elapsed,
  total: counts.window,
  mean: latencies.reduce((a, b) => a + b, 0) / (latencies.length || 1),
  p50: at(0.5),
  p99: at(0.99),
  max: latencies.at(-1) ?? NaN,
  mibPerSecond: counts.bytes / elapsed / 2 ** 20,
  ok250: counts.ok,
  errors: counts.errors,
  errorSamples,
  reconnects: counts.reconnects,
  connections: counts.connections,
  cpu: (cpu.user + cpu.system) / 1e6 / elapsed,
};
process.stdout.write(`${JSON.stringify(summary)}\n`);
