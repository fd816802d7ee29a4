import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { parser } from 'imapflow/lib/handler/imap-handler.js';
import { type Folder, SPECIAL_USE, folderNamed, labelOfFlag, UNREAD_LABEL } from '../core/folders.js';
import type { Message } from '../core/message.js';
import type { LabelChange } from '../mailstore/labels.service.js';
import type { FolderEntry } from '../mailstore/folder.repository.js';
import type { MimeEntity } from '../mail/mime-structure.js';
import { type ImapAccount, type ImapService, ImapNoError, uidValidityOf } from './imap.service.js';
import {
  type Node,
  type SectionRequest,
  bodyStructure,
  compileResponse,
  envelope,
  flagList,
  internalDate,
  parseEntity,
  parseSection,
  sectionBytes,
  str,
} from './imap-fetch.js';
import { tlsOptions, watchTls } from '../smtp/smtp.server.js';
import type { LoginBudget } from '../../platform/login-budget.js';

/**
 * The IMAP listener (decision 0045): a protocol adapter, as smtp.server.ts is. It reads commands
 * (lines and literals, with their limits), parses them with imapflow's parser, keeps the state of
 * a session (the selected folder's UIDs and flags as the client knows them) and answers as
 * imapflow's compiler would (imap-fetch.ts `compileResponse`, decision 0052); every decision and
 * every change is `imap.service.ts`'s.
 */

export interface ImapListenerConfig {
  readonly host: string;
  /** IMAP with STARTTLS (when TLS is configured); 0 picks a free port. */
  readonly port: number;
  /** Implicit TLS, only with a key and certificate; 0 picks a free port. */
  readonly tlsPort: number;
  readonly tlsKey: string | undefined;
  readonly tlsCert: string | undefined;
  readonly allowPlaintextLoopback: boolean;
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
  /** Logged-in sessions of one API key on this process. */
  readonly maxConnectionsPerKey: number;
  readonly idleTimeoutMs: number;
  /** How long a write may wait for a client that reads nothing before it is cut off. */
  readonly writeTimeoutMs: number;
  /** Failed logins (login-budget.ts): shared with SMTP submission, and through Redis with other instances. */
  readonly logins: LoginBudget;
}

export interface ImapLog {
  info(o: object, m: string): void;
  warn(o: object, m: string): void;
  error(o: object, m: string): void;
}

export interface RunningImapServer {
  readonly host: string;
  readonly port: number;
  /** The implicit-TLS port, when TLS is configured. */
  readonly tlsPort: number | undefined;
  /** Tells the sessions of these inboxes that their folders changed (imap/folder-signal.ts). */
  foldersChanged(inboxIds: readonly string[]): void;
  /** Ends the sessions of a key that was deleted or changed. */
  dropKey(apiKeyId: string): void;
  close(): Promise<void>;
}

/** A command line, without its literals. */
const MAX_LINE_BYTES = 64 * 1024;
/** A literal of any command but APPEND. */
const MAX_LITERAL_BYTES = 64 * 1024;
/**
 * The message literal of an APPEND: read to its end but kept only up to APPEND_KEPT_BYTES (its
 * header is all APPEND into Sent looks at), so that it never sits in memory whole.
 */
const MAX_APPEND_BYTES = 200 * 1024 * 1024;
const APPEND_KEPT_BYTES = 64 * 1024;
/** The message literal of an APPEND into Drafts: kept whole (it becomes a draft), so bounded lower. */
const MAX_DRAFT_APPEND_BYTES = 10 * 1024 * 1024;
/** A whole command with its literals. */
const MAX_COMMAND_BYTES = 256 * 1024;
/** Bytes a client may leave unread before it is cut off. */
const MAX_UNREAD_BYTES = 16 * 1024 * 1024;
/**
 * A message larger than this whose FETCH needs its structure but no body bytes (BODYSTRUCTURE with
 * a header sync) is scanned piece by piece rather than read whole.
 */
const SCAN_STRUCTURE_BYTES = 256 * 1024;
/** Messages read from the database per step of a FETCH or SEARCH. */
const FETCH_BATCH = 100;
/** BODY[] of messages whose sources are in their rows: read together up to this many bytes. */
const SMALL_SOURCES_BYTES = 1024 * 1024;
/**
 * Answers are held (the socket corked) while a command runs and sent when it ends, or whenever this
 * many bytes wait: one write per command or per 64 KiB instead of one per line and literal piece.
 */
const SEND_BYTES = 64 * 1024;

const CRLF = Buffer.from('\r\n');
const atom = (value: string) => ({ type: 'ATOM', value });
const literal = (value: Buffer) => ({ type: 'LITERAL', value });

class BadCommand extends Error {}

type ParsedAttribute =
  { type?: string; value?: unknown; section?: unknown[]; partial?: number[] } | ParsedAttribute[] | null;

interface Parsed {
  tag: string;
  command: string;
  attributes: ParsedAttribute[];
}

/** The text value of an atom, string or literal attribute. */
function text(a: ParsedAttribute | undefined): string {
  if (!a || Array.isArray(a) || a.value === undefined || a.value === null) throw new BadCommand('Missing argument');
  return Buffer.isBuffer(a.value) ? a.value.toString('utf8') : String(a.value);
}

const isLoopback = (address: string | undefined) =>
  !!address && (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'));

/** A sequence set against `max` (`*`): a test of membership. */
function sequenceSet(value: string, max: number): (n: number) => boolean {
  if (!/^(\d+|\*)(:(\d+|\*))?(,(\d+|\*)(:(\d+|\*))?)*$/.test(value)) throw new BadCommand('Invalid sequence set');
  const ranges = value
    .split(',')
    .map((part) => {
      const [a, b] = part.split(':').map((v) => (v === '*' ? max : Number(v))) as [number, number | undefined];
      const hi = b ?? a;
      return [Math.min(a, hi), Math.max(a, hi)] as const;
    })
    .sort((x, y) => x[0] - y[0]);
  // Merged and searched by halves: a client's set may name thousands of UIDs one by one.
  const merged: [number, number][] = [];
  for (const [lo, hi] of ranges) {
    const last = merged[merged.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else merged.push([lo, hi]);
  }
  return (n) => {
    let low = 0;
    let high = merged.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const [lo, hi] = merged[mid] as [number, number];
      if (n < lo) high = mid - 1;
      else if (n > hi) low = mid + 1;
      else return true;
    }
    return false;
  };
}

interface Selected {
  folder: Folder;
  readOnly: boolean;
  uidValidity: number;
  uidNext: number;
  /** The folder's modseq the entries reflect (decision 0052): a resync reads only what changed after it. */
  modseq: number;
  /** The messages as the client knows them, by sequence number − 1. */
  entries: FolderEntry[];
  /** UIDs gone from the store whose EXPUNGE the client has not been told yet. */
  gone: Set<number>;
  /** \Deleted, kept by the session (decision 0045). */
  deleted: Set<number>;
}

export async function startImapServer(
  config: ImapListenerConfig,
  imap: ImapService,
  log: ImapLog,
): Promise<RunningImapServer> {
  if (!config.tlsKey !== !config.tlsCert)
    throw new Error('INBOX_SMTP_TLS_KEY and INBOX_SMTP_TLS_CERT must be set together');
  const tlsPair = tlsOptions(config);
  let secureContext = tlsPair.key ? tls.createSecureContext(tlsPair) : undefined;
  const sessions = new Set<Session>();
  const perIp = new Map<string, number>();
  const budget = config.logins;
  let closing = false;

  class Session {
    socket: net.Socket;
    secure: boolean;
    private input: Buffer = Buffer.alloc(0);
    private command: Buffer[] = [];
    private commandBytes = 0;
    private literalNeeded = 0;
    /** Bytes of the literal being read that are kept (the rest of an APPEND's is dropped as it arrives). */
    private literalKept = 0;
    private running = false;
    private closed = false;
    state: 'fresh' | 'auth' | 'selected' = 'fresh';
    account: ImapAccount | undefined;
    selected: Selected | undefined;
    private idleTag: string | undefined;
    private saslTag: string | undefined;
    private dirty = false;
    /** The socket this session corked (the one of its command's start: STARTTLS replaces it). */
    private corked: net.Socket | undefined;
    private readonly ip: string;

    constructor(socket: net.Socket, secure: boolean) {
      this.socket = socket;
      this.secure = secure;
      this.ip = socket.remoteAddress ?? '';
      this.attach(socket);
    }

    private attach(socket: net.Socket) {
      // Answers go out when the session sends them (whole, see SEND_BYTES), not when an ACK comes
      // back: Nagle's wait for one, against a client's delayed ACK, cost 40 ms per FETCH.
      socket.setNoDelay(true);
      socket.on('data', (chunk: Buffer) => this.onData(chunk));
      socket.on('error', () => this.destroy());
      socket.on('close', () => this.destroy());
      socket.setTimeout(config.idleTimeoutMs, () => {
        this.write(`* BYE Idle for too long${CRLF}`);
        this.end();
      });
    }

    greet() {
      this.write(`* OK [CAPABILITY ${this.capabilities()}] agent-services inbox IMAP ready\r\n`);
    }

    private loginAllowed() {
      return this.secure || (config.allowPlaintextLoopback && isLoopback(this.ip));
    }

    capabilities(): string {
      const caps = ['IMAP4rev1', 'LITERAL+', 'SASL-IR', 'ID', 'ENABLE', 'IDLE', 'NAMESPACE', 'UNSELECT'];
      if (this.state === 'fresh') {
        if (!this.secure && secureContext) caps.push('STARTTLS');
        caps.push(this.loginAllowed() ? 'AUTH=PLAIN' : 'LOGINDISABLED');
      } else caps.push('UIDPLUS', 'MOVE', 'SPECIAL-USE', 'CHILDREN', `APPENDLIMIT=${MAX_APPEND_BYTES}`);
      return caps.join(' ');
    }

    write(data: string | Buffer): boolean {
      if (this.closed) return false;
      // What the client left unread before this write: one large answer (a section of a big
      // message) may exceed the bound, a backlog of answers (pushed to an IDLE client that reads
      // nothing) may not.
      if (this.socket.writableLength > MAX_UNREAD_BYTES) {
        log.warn({ ip: this.ip }, 'imap: client does not read its responses; disconnected');
        this.destroy();
        return false;
      }
      return this.socket.write(data);
    }

    /** Holds what is written until `send` (or the end of the command): a command's answer in few writes. */
    private hold() {
      if (this.corked || this.closed) return;
      this.corked = this.socket;
      this.corked.cork();
    }

    /** Sends what `hold` kept back. */
    private send() {
      const corked = this.corked;
      this.corked = undefined;
      corked?.uncork();
    }

    /** Sends what is held once SEND_BYTES of it wait, then waits for the client (backpressure). */
    async paced(): Promise<void> {
      if (this.socket.writableLength < SEND_BYTES) return;
      await this.flushed();
      this.hold();
    }

    /** Sends what is held and waits until the client has read what was written (backpressure), or cuts it off. */
    async flushed(): Promise<void> {
      this.send();
      if (this.closed || !this.socket.writableNeedDrain) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          log.warn({ ip: this.ip }, 'imap: client stopped reading; disconnected');
          this.destroy();
          resolve();
        }, config.writeTimeoutMs);
        const done = () => {
          clearTimeout(timer);
          this.socket.off('drain', done);
          this.socket.off('close', done);
          resolve();
        };
        this.socket.once('drain', done);
        this.socket.once('close', done);
      });
    }

    respond(tag: string, command: string, attributes: Node[]) {
      this.write(compileResponse(tag, command, attributes));
      this.write(CRLF);
    }

    /** Ends the connection once what was written has been sent (LOGOUT, BYE). */
    end() {
      if (this.closed) return;
      this.socket.end();
      const socket = this.socket;
      const timer = setTimeout(() => socket.destroy(), 5_000);
      timer.unref();
      this.socket.once('close', () => clearTimeout(timer));
      this.release();
    }

    destroy() {
      if (this.closed) return;
      this.release();
      this.socket.destroy();
    }

    private release() {
      if (this.closed) return;
      this.closed = true;
      sessions.delete(this);
      const n = (perIp.get(this.ip) ?? 1) - 1;
      if (n > 0) perIp.set(this.ip, n);
      else perIp.delete(this.ip);
    }

    private onData(chunk: Buffer) {
      this.input = this.input.length ? Buffer.concat([this.input, chunk]) : chunk;
      if (this.input.length > MAX_COMMAND_BYTES + MAX_LINE_BYTES) this.socket.pause();
      this.pump();
    }

    /** Takes complete lines and literals off the input while no command runs. */
    private pump() {
      while (!this.running && !this.closed) {
        if (this.literalNeeded > 0) {
          if (!this.input.length) break;
          const take = Math.min(this.input.length, this.literalNeeded);
          const keep = Math.min(take, this.literalKept);
          if (keep) this.command.push(this.input.subarray(0, keep));
          this.literalKept -= keep;
          this.input = this.input.subarray(take);
          this.literalNeeded -= take;
          continue;
        }
        const lf = this.input.indexOf(0x0a);
        if (lf < 0) {
          if (this.input.length > MAX_LINE_BYTES) {
            this.write('* BYE Command line too long\r\n');
            this.end();
          }
          break;
        }
        let line = this.input.subarray(0, lf);
        this.input = this.input.subarray(lf + 1);
        if (line[line.length - 1] === 0x0d) line = line.subarray(0, -1);
        if (line.length > MAX_LINE_BYTES) {
          this.write('* BYE Command line too long\r\n');
          this.end();
          break;
        }
        this.onLine(line);
      }
      if (!this.running && this.socket.isPaused() && this.input.length < MAX_COMMAND_BYTES) this.socket.resume();
    }

    private onLine(line: Buffer) {
      if (this.idleTag !== undefined && !this.command.length) {
        const tag = this.idleTag;
        if (line.toString('latin1').trim().toUpperCase() === 'DONE') {
          this.idleTag = undefined;
          this.write(`${tag} OK IDLE terminated\r\n`);
        } else {
          this.idleTag = undefined;
          this.write(`${tag} BAD Expected DONE\r\n`);
        }
        return;
      }
      if (this.saslTag !== undefined && !this.command.length) {
        const tag = this.saslTag;
        this.saslTag = undefined;
        this.run(() => this.finishPlain(tag, line.toString('latin1').trim()));
        return;
      }
      const marker = /\{(\d{1,10})(\+?)\}$/.exec(line.toString('latin1', Math.max(0, line.length - 16)));
      this.commandBytes += line.length + 2;
      if (marker) {
        const size = Number(marker[1]);
        const plus = marker[2] === '+';
        const start = (this.command[0] ?? line).toString('latin1', 0, 64);
        const append = /^\S+ APPEND /i.test(start);
        // Into Drafts the whole message is kept (it becomes a draft); elsewhere only its header.
        const draft = append && /^\S+ APPEND "?Drafts"?(?: |$)/i.test(start);
        const kept = append && !draft ? Math.min(size, APPEND_KEPT_BYTES) : size;
        const limit = draft ? MAX_DRAFT_APPEND_BYTES : append ? MAX_APPEND_BYTES : MAX_LITERAL_BYTES;
        if (size > limit || this.commandBytes + kept > MAX_COMMAND_BYTES + (draft ? MAX_DRAFT_APPEND_BYTES : 0)) {
          if (plus) {
            // The client sends the bytes anyway: they cannot be told apart from commands.
            this.write('* BYE Literal too large\r\n');
            this.end();
            return;
          }
          const tag = (this.command[0] ?? line).toString('latin1').split(' ')[0] || '*';
          this.command = [];
          this.commandBytes = 0;
          this.write(`${tag} BAD [TOOBIG] Literal too large\r\n`);
          return;
        }
        // The parser sees the literal as it is kept.
        const marked =
          kept === size ? line : Buffer.from(line.toString('latin1').replace(/\{\d+(\+?)\}$/, `{${kept}$1}`), 'latin1');
        this.command.push(marked, CRLF);
        this.literalNeeded = size;
        this.literalKept = kept;
        this.commandBytes += kept;
        if (!plus) this.write('+ Ready for literal data\r\n');
        return;
      }
      this.command.push(line);
      const whole = Buffer.concat(this.command);
      this.command = [];
      this.commandBytes = 0;
      this.run(() => this.execute(whole));
    }

    /** Runs one unit of work; input waits until it is done. */
    run(work: () => Promise<void>) {
      this.running = true;
      this.hold();
      work()
        .catch((err: unknown) => {
          log.error({ err }, 'imap: command failed');
        })
        .finally(() => {
          this.send();
          this.running = false;
          // Changes that arrived while the unit ran: an IDLE-ing client still hears of them.
          if (this.dirty && this.idleTag !== undefined && !this.closed) this.run(() => this.sync(true));
          else this.pump();
        });
    }

    /** The folders changed in the store: an IDLE-ing client hears at once, others at their next command. */
    changed() {
      if (!this.selected) return;
      this.dirty = true;
      if (this.idleTag !== undefined && !this.running) this.run(() => this.sync(true));
    }

    private async execute(raw: Buffer) {
      let parsed: Parsed;
      try {
        parsed = (await parser(raw, { literalPlus: true })) as unknown as Parsed;
      } catch {
        const tag = /^[^\s(){%*"\\\]]+/.exec(raw.toString('latin1'))?.[0];
        this.write(`${tag && tag !== '+' ? tag : '*'} BAD Unparsable command\r\n`);
        return;
      }
      const tag = parsed.tag;
      const command = (parsed.command ?? '').toUpperCase();
      const args = parsed.attributes ?? [];
      if (!tag || tag === '*' || tag === '+' || !command) {
        this.write('* BAD Missing tag or command\r\n');
        return;
      }
      try {
        await this.dispatch(tag, command, args);
      } catch (err) {
        if (err instanceof BadCommand) this.write(`${tag} BAD ${err.message}\r\n`);
        else if (err instanceof ImapNoError) this.write(`${tag} NO [${err.code}] ${err.message}\r\n`);
        else {
          log.error({ err, command }, 'imap: command failed');
          this.write(`${tag} NO [SERVERBUG] The command failed; try again\r\n`);
        }
      }
    }

    private async dispatch(tag: string, command: string, args: ParsedAttribute[]) {
      switch (command) {
        case 'CAPABILITY':
          this.write(`* CAPABILITY ${this.capabilities()}\r\n${tag} OK CAPABILITY completed\r\n`);
          return;
        case 'NOOP':
        case 'CHECK':
          if (command === 'CHECK') this.requireSelected();
          if (this.selected) await this.sync(true);
          this.write(`${tag} OK ${command} completed\r\n`);
          return;
        case 'LOGOUT':
          this.write(`* BYE Logging out\r\n${tag} OK LOGOUT completed\r\n`);
          this.end();
          return;
        case 'ID':
          this.respond('*', 'ID', [[str('name'), str('agent-services'), str('vendor'), str('agent-services')]]);
          this.write(`${tag} OK ID completed\r\n`);
          return;
        case 'STARTTLS':
          return this.startTls(tag);
        case 'LOGIN':
          return this.login(tag, text(args[0]), text(args[1]));
        case 'AUTHENTICATE PLAIN':
        case 'AUTHENTICATE':
          return this.authenticate(tag, command, args);
      }
      if (this.state === 'fresh') throw new BadCommand(`${command} needs a login first`);
      const account = this.account as ImapAccount;
      switch (command) {
        case 'ENABLE':
          this.write(`* ENABLED\r\n${tag} OK ENABLE completed\r\n`);
          return;
        case 'NAMESPACE':
          this.write(`* NAMESPACE (("" "/")) NIL NIL\r\n${tag} OK NAMESPACE completed\r\n`);
          return;
        case 'LIST':
        case 'LSUB':
          return this.list(tag, command, args, account);
        case 'STATUS':
          return this.status(tag, args, account);
        case 'SELECT':
        case 'EXAMINE':
          return this.select(tag, command, args, account);
        case 'SUBSCRIBE':
        case 'UNSUBSCRIBE':
          this.folderArg(args[0], account);
          this.write(`${tag} OK ${command} completed\r\n`);
          return;
        case 'CREATE':
        case 'DELETE':
        case 'RENAME':
          throw new ImapNoError('CANNOT', 'The folders of an inbox are fixed: INBOX, Sent, Trash, Spam, Drafts.');
        case 'APPEND':
          return this.append(tag, args, account);
        case 'IDLE':
          if (this.selected && this.dirty) await this.sync(true);
          this.idleTag = tag;
          this.write('+ idling\r\n');
          return;
      }
      const selected = this.requireSelected();
      switch (command) {
        case 'CLOSE':
        case 'UNSELECT':
          if (command === 'CLOSE' && !selected.readOnly && selected.deleted.size)
            await this.expungeMarked(account, selected, [...selected.deleted]);
          this.selected = undefined;
          this.state = 'auth';
          this.write(`${tag} OK ${command} completed\r\n`);
          return;
        case 'EXPUNGE':
          return this.expunge(tag, account, selected, undefined);
        case 'FETCH':
        case 'UID FETCH':
          return this.fetch(tag, command === 'UID FETCH', args, account, selected);
        case 'SEARCH':
        case 'UID SEARCH':
          return this.search(tag, command === 'UID SEARCH', args, account, selected);
        case 'STORE':
        case 'UID STORE':
          return this.store(tag, command === 'UID STORE', args, account, selected);
        case 'MOVE':
        case 'UID MOVE':
          return this.move(tag, command === 'UID MOVE', args, account, selected);
        case 'UID EXPUNGE':
          return this.expunge(tag, account, selected, text(args[0]));
        case 'COPY':
        case 'UID COPY':
          throw new ImapNoError('CANNOT', 'A message is in one place of the store; use MOVE.');
      }
      throw new BadCommand(`Unknown command ${command.slice(0, 40)}`);
    }

    private requireSelected(): Selected {
      if (this.state !== 'selected' || !this.selected) throw new BadCommand('No folder selected');
      return this.selected;
    }

    private folderArg(a: ParsedAttribute | undefined, account: ImapAccount): Folder {
      const folder = folderNamed(text(a));
      if (!folder || !imap.folders(account).includes(folder)) throw new ImapNoError('NONEXISTENT', 'No such folder');
      return folder;
    }

    private async startTls(tag: string) {
      if (this.secure || !secureContext) throw new BadCommand('STARTTLS is not available');
      if (this.state !== 'fresh') throw new BadCommand('STARTTLS only before login');
      this.write(`${tag} OK Begin TLS negotiation now\r\n`);
      // Out on the plain socket before TLS takes it over.
      this.send();
      // Whatever the client sent after STARTTLS in clear text is dropped (command injection).
      this.input = Buffer.alloc(0);
      const plain = this.socket;
      plain.removeAllListeners('data');
      plain.removeAllListeners('timeout');
      plain.setTimeout(0);
      const secured = new tls.TLSSocket(plain, { isServer: true, secureContext });
      this.socket = secured;
      this.secure = true;
      secured.on('data', (chunk: Buffer) => this.onData(chunk));
      secured.on('error', () => this.destroy());
      secured.on('close', () => this.destroy());
      secured.setTimeout(config.idleTimeoutMs, () => this.destroy());
    }

    private async login(tag: string, user: string, password: string) {
      if (this.state !== 'fresh') throw new BadCommand('Already logged in');
      if (!this.loginAllowed()) throw new ImapNoError('PRIVACYREQUIRED', 'Log in over TLS (STARTTLS or port 993).');
      if (await budget.blocked(user, this.ip)) {
        log.warn({ user, ip: this.ip }, 'imap: login refused, too many failures');
        throw new ImapNoError('UNAVAILABLE', 'Too many failed logins; try again later.');
      }
      const result = await imap.login(user, password);
      if (!result.ok) {
        await budget.failed(user, this.ip);
        log.warn({ user, ip: this.ip, reason: result.reason }, 'imap: login failed');
        if (result.reason === 'permission')
          throw new ImapNoError('AUTHORIZATIONFAILED', 'This API key lacks the message_read permission.');
        throw new ImapNoError('AUTHENTICATIONFAILED', 'Invalid user name (the inbox address) or API key.');
      }
      const keyId = result.account.owner.apiKeyId;
      if ([...sessions].filter((s) => s.account?.owner.apiKeyId === keyId).length >= config.maxConnectionsPerKey)
        throw new ImapNoError('LIMIT', 'Too many sessions with this API key; log out elsewhere first.');
      this.account = result.account;
      this.state = 'auth';
      log.info({ user, ip: this.ip, apiKeyId: result.account.owner.apiKeyId }, 'imap: logged in');
      this.write(`${tag} OK [CAPABILITY ${this.capabilities()}] Logged in\r\n`);
    }

    private async authenticate(tag: string, command: string, args: ParsedAttribute[]) {
      const mechanism = command === 'AUTHENTICATE PLAIN' ? 'PLAIN' : text(args.shift()).toUpperCase();
      if (mechanism !== 'PLAIN') throw new ImapNoError('CANNOT', 'Only AUTHENTICATE PLAIN is supported.');
      if (this.state !== 'fresh') throw new BadCommand('Already logged in');
      if (!this.loginAllowed()) throw new ImapNoError('PRIVACYREQUIRED', 'Log in over TLS (STARTTLS or port 993).');
      if (args[0]) return this.finishPlain(tag, text(args[0]));
      this.saslTag = tag;
      this.write('+ \r\n');
    }

    private async finishPlain(tag: string, response: string) {
      try {
        if (response === '*') throw new BadCommand('Authentication cancelled');
        const decoded = Buffer.from(response === '=' ? '' : response, 'base64').toString('utf8');
        const [authz, user, password] = decoded.split('\0');
        if (user === undefined || password === undefined || (authz && authz !== user))
          throw new BadCommand('Invalid PLAIN response');
        await this.login(tag, user, password);
      } catch (err) {
        if (err instanceof BadCommand) this.write(`${tag} BAD ${err.message}\r\n`);
        else if (err instanceof ImapNoError) this.write(`${tag} NO [${err.code}] ${err.message}\r\n`);
        else throw err;
      }
    }

    private list(tag: string, command: string, args: ParsedAttribute[], account: ImapAccount) {
      const reference = text(args[0]);
      const patternArg = args[1];
      // LIST-EXTENDED: LIST (SPECIAL-USE) "" "*" and LIST "" "*" RETURN (SPECIAL-USE).
      let rest = args;
      let specialOnly = false;
      if (Array.isArray(args[0])) {
        specialOnly = args[0].some((a) => !Array.isArray(a) && String(a?.value ?? '').toUpperCase() === 'SPECIAL-USE');
        rest = args.slice(1);
      }
      const pattern = Array.isArray(args[0]) ? text(rest[1]) : text(patternArg);
      const ref = Array.isArray(args[0]) ? text(rest[0]) : reference;
      if (pattern === '') {
        this.write(`* ${command} (\\Noselect) "/" ""\r\n${tag} OK ${command} completed\r\n`);
        return;
      }
      const full = ref + pattern;
      const re = new RegExp(
        `^${full
          .split('')
          .map((c) => (c === '*' ? '.*' : c === '%' ? '[^/]*' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
          .join('')}$`,
        'i',
      );
      for (const folder of imap.folders(account)) {
        if (!re.test(folder)) continue;
        if (specialOnly && !SPECIAL_USE[folder]) continue;
        const attributes = ['\\HasNoChildren', ...(SPECIAL_USE[folder] ? [SPECIAL_USE[folder] as string] : [])];
        this.write(`* ${command} (${attributes.join(' ')}) "/" ${folder}\r\n`);
      }
      this.write(`${tag} OK ${command} completed\r\n`);
    }

    /**
     * APPEND into Drafts makes a draft (the draft service, as the REST API does). APPEND into Sent
     * of a message the inbox sent already (a mail client keeping a copy of what it just sent
     * through SMTP submission) is answered with the UID it has there, nothing stored twice.
     * Anything else has no place in the store: messages enter it only by delivery.
     */
    private async append(tag: string, args: ParsedAttribute[], account: ImapAccount) {
      const folder = this.folderArg(args[0], account);
      const message = args[args.length - 1];
      if (!message || Array.isArray(message) || message.type !== 'LITERAL')
        throw new BadCommand('APPEND needs a message');
      if (folder === 'Drafts') {
        const raw = Buffer.isBuffer(message.value) ? message.value : Buffer.from(String(message.value), 'utf8');
        const made = await imap.appendDraft(account, raw);
        this.write(`${tag} OK [APPENDUID ${made.uidValidity} ${made.uid}] APPEND completed (a new draft)\r\n`);
        return;
      }
      if (folder !== 'Sent')
        throw new ImapNoError('CANNOT', `Messages cannot be added to ${folder}; send them through SMTP submission.`);
      const header = text(message).split(/\r?\n\r?\n/)[0] ?? '';
      const id = /^message-id:\s*(<[^<>\s]+>)/im.exec(header)?.[1];
      const sent = id ? await imap.findSent(account, id) : undefined;
      if (!sent)
        throw new ImapNoError('CANNOT', 'Sent holds what the inbox sent: send the message through SMTP submission.');
      this.write(`${tag} OK [APPENDUID ${sent.uidValidity} ${sent.uid}] APPEND completed (already in Sent)\r\n`);
    }

    private async status(tag: string, args: ParsedAttribute[], account: ImapAccount) {
      const folder = this.folderArg(args[0], account);
      const items = args[1];
      if (!Array.isArray(items) || !items.length) throw new BadCommand('STATUS needs a list of items');
      const view = await imap.status(account, folder);
      const out: Node[] = [];
      for (const item of items) {
        const name = text(item).toUpperCase();
        const value =
          name === 'MESSAGES'
            ? view.messages
            : name === 'RECENT'
              ? 0
              : name === 'UIDNEXT'
                ? view.uidNext
                : name === 'UIDVALIDITY'
                  ? view.uidValidity
                  : name === 'UNSEEN'
                    ? view.unseen
                    : undefined;
        if (value === undefined) throw new BadCommand(`Unknown STATUS item ${name.slice(0, 40)}`);
        out.push(atom(name), value);
      }
      this.respond('*', 'STATUS', [atom(folder), out]);
      this.write(`${tag} OK STATUS completed\r\n`);
    }

    private async select(tag: string, command: string, args: ParsedAttribute[], account: ImapAccount) {
      // A failed SELECT leaves no folder selected (RFC 3501 §6.3.1).
      this.selected = undefined;
      this.state = 'auth';
      const folder = this.folderArg(args[0], account);
      const view = await imap.open(account, folder);
      // Drafts is read-write for keys that may delete drafts (EXPUNGE deletes them), else a view.
      const readOnly = command === 'EXAMINE' || (folder === 'Drafts' && !imap.draftsWritable(account));
      this.selected = {
        folder,
        readOnly,
        uidValidity: view.uidValidity,
        uidNext: view.uidNext,
        modseq: view.modseq,
        entries: view.entries,
        gone: new Set(),
        deleted: new Set(),
      };
      this.state = 'selected';
      this.dirty = false;
      const firstUnseen = view.entries.findIndex((e) => e.labels.includes(UNREAD_LABEL));
      this.write(
        [
          '* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)',
          `* OK [PERMANENTFLAGS (${readOnly ? '' : folder === 'Drafts' ? '\\Deleted' : '\\Answered \\Flagged \\Deleted \\Seen \\*'})] Flags permitted`,
          `* ${view.entries.length} EXISTS`,
          '* 0 RECENT',
          ...(firstUnseen >= 0 ? [`* OK [UNSEEN ${firstUnseen + 1}] First unseen`] : []),
          `* OK [UIDVALIDITY ${view.uidValidity}] UIDs valid`,
          `* OK [UIDNEXT ${view.uidNext}] Predicted next UID`,
          `${tag} OK [${readOnly ? 'READ-ONLY' : 'READ-WRITE'}] ${command} completed`,
          '',
        ].join('\r\n'),
      );
    }

    /**
     * Brings the client up to date with the store: EXPUNGE for messages gone (when `expunges` may
     * be sent), FETCH FLAGS for changed flags, EXISTS for new messages.
     */
    async sync(expunges: boolean) {
      const selected = this.selected;
      const account = this.account;
      if (!selected || !account) return;
      this.dirty = false;
      const entries = selected.entries;
      const lastUid = entries.length ? (entries[entries.length - 1] as FolderEntry).uid : 0;
      // Only what changed since the session's modseq (decision 0052); Drafts is read whole.
      const changes = await imap.changes(account, selected.folder, {
        modseq: selected.modseq,
        lastUid,
        count: entries.length - selected.gone.size,
      });
      if (this.selected !== selected) return;
      let fresh: Map<number, FolderEntry>;
      let uidNext: number;
      if (changes) {
        fresh = new Map(changes.entries.map((e) => [e.uid, e]));
        if (changes.present) {
          const present = new Set(changes.present);
          for (const e of entries) if (!present.has(e.uid)) selected.gone.add(e.uid);
        }
        uidNext = changes.uidNext;
        selected.modseq = Math.max(selected.modseq, changes.modseq);
      } else {
        const view = await imap.open(account, selected.folder);
        if (this.selected !== selected) return;
        fresh = new Map(view.entries.map((e) => [e.uid, e]));
        for (const e of entries) if (!fresh.has(e.uid)) selected.gone.add(e.uid);
        uidNext = view.uidNext;
      }
      const lines: string[] = [];
      if (expunges && selected.gone.size) {
        for (let i = entries.length - 1; i >= 0; i--) {
          const uid = (entries[i] as FolderEntry).uid;
          if (!selected.gone.has(uid)) continue;
          lines.push(`* ${i + 1} EXPUNGE`);
          entries.splice(i, 1);
          selected.deleted.delete(uid);
        }
        selected.gone.clear();
      }
      entries.forEach((e, i) => {
        const now = fresh.get(e.uid);
        if (!now || selected.gone.has(e.uid) || sameLabels(now.labels, e.labels)) return;
        entries[i] = now;
        lines.push(this.flagsLine(i + 1, now, selected));
      });
      const added = [...fresh.values()].filter((e) => e.uid > lastUid).sort((a, b) => a.uid - b.uid);
      if (added.length) {
        entries.push(...added);
        lines.push(`* ${entries.length} EXISTS`);
      }
      selected.uidNext = Math.max(selected.uidNext, uidNext);
      if (lines.length) this.write(`${lines.join('\r\n')}\r\n`);
    }

    private flagsLine(seq: number, e: FolderEntry, selected: Selected): string {
      const flags = entryFlags(e, selected).map((f) => (f as { value: string }).value);
      return `* ${seq} FETCH (UID ${e.uid} FLAGS (${flags.join(' ')}))`;
    }

    /** The entries (with their sequence numbers) a set names. */
    private resolve(selected: Selected, set: string, byUid: boolean): { seq: number; entry: FolderEntry }[] {
      const entries = selected.entries;
      if (byUid) {
        const max = entries.length ? (entries[entries.length - 1] as FolderEntry).uid : 0;
        const test = sequenceSet(set, max);
        return entries.flatMap((entry, i) => (test(entry.uid) ? [{ seq: i + 1, entry }] : []));
      }
      // A number beyond the folder is a client error (RFC 3501 §9 seq-number); `*` on an empty folder names nothing.
      if (set.split(/[,:]/).some((n) => n !== '*' && Number(n) > entries.length))
        throw new BadCommand('Invalid message sequence number');
      const test = sequenceSet(set, entries.length);
      return entries.flatMap((entry, i) => (test(i + 1) ? [{ seq: i + 1, entry }] : []));
    }

    private pksOf(uids: readonly number[]): number[] {
      const selected = this.selected;
      if (!selected) return [];
      const wanted = new Set(uids);
      return selected.entries.filter((e) => wanted.has(e.uid)).map((e) => e.pk);
    }

    private async fetch(
      tag: string,
      byUid: boolean,
      args: ParsedAttribute[],
      account: ImapAccount,
      selected: Selected,
    ) {
      if (this.dirty) await this.sync(byUid);
      const targets = this.resolve(selected, text(args[0]), byUid);
      const items = fetchItems(args[1]);
      if (byUid && !items.some((i) => i.name === 'UID')) items.unshift({ name: 'UID' });
      // A whole message (BODY[], BODY.PEEK[] or RFC822 without a range) is streamed from the
      // stored pieces when nothing else asks for the source: never all of a large one in memory.
      const whole = (i: FetchItem) =>
        i.name === 'RFC822' || (i.name === 'BODY[]' && !i.partial && !i.section?.parts.length && !i.section?.kind);
      const streamed = items.filter(whole).length === 1 ? items.find(whole) : undefined;
      const rest = items.filter((i) => i !== streamed);
      const needsSource = rest.some((i) =>
        ['ENVELOPE', 'BODYSTRUCTURE', 'BODY', 'BODY[]', 'RFC822', 'RFC822.HEADER', 'RFC822.TEXT'].includes(i.name),
      );
      // ENVELOPE and the message's header sections (what a client's header sync asks for) need
      // only the first pieces of a source, up to its blank line: a large message is not read whole.
      const headerOnly = rest.every(
        (i) =>
          !['BODYSTRUCTURE', 'BODY', 'RFC822', 'RFC822.TEXT'].includes(i.name) &&
          (i.name !== 'BODY[]' || (!i.section?.parts.length && (i.section?.kind ?? '').startsWith('HEADER'))),
      );
      // BODYSTRUCTURE (and BODY) need the structure of all of the source, not its bytes.
      const structureOnly = rest.every(
        (i) =>
          !['RFC822', 'RFC822.TEXT'].includes(i.name) &&
          (i.name !== 'BODY[]' || (!i.section?.parts.length && (i.section?.kind ?? '').startsWith('HEADER'))),
      );
      // Drafts have no unread label: a FETCH there changes nothing (and their keys are no messages').
      const seen = !selected.readOnly && selected.folder !== 'Drafts' && items.some((i) => i.setsSeen);
      const flagsOnly = items.every((i) => i.name === 'UID' || i.name === 'FLAGS');
      for (let i = 0; i < targets.length; i += FETCH_BATCH) {
        const batch = targets.slice(i, i + FETCH_BATCH);
        const live = batch.filter((t) => !selected.gone.has(t.entry.uid));
        if (seen) {
          const unread = live.filter((t) => t.entry.labels.includes(UNREAD_LABEL)).map((t) => t.entry.pk);
          if (unread.length) {
            const after = await imap.relabel(account, unread, { add: [], remove: [UNREAD_LABEL] });
            for (const t of live) {
              const labels = after.get(t.entry.pk);
              if (labels) {
                t.entry = { ...t.entry, labels };
                selected.entries[t.seq - 1] = t.entry;
              }
            }
          }
        }
        // UID and FLAGS are the session's own (a client's flag resync): no row is read for them.
        const messages = flagsOnly
          ? undefined
          : await imap.messages(
              account,
              live.map((t) => t.entry.pk),
              selected.folder,
            );
        // A header sync reads the small sources of the batch in one statement.
        const heads =
          needsSource && headerOnly && messages ? await imap.sourceHeads(account, [...messages.values()]) : undefined;
        // BODY[] of small messages: the sources kept in their rows, read in one statement per
        // SMALL_SOURCES_BYTES of them; larger ones (blobs) are streamed piece by piece below.
        let small = new Map<number, Buffer>();
        let smallUntil = 0;
        for (const [index, t] of live.entries()) {
          if (streamed && messages && index >= smallUntil) {
            let bytes = 0;
            const group: Message[] = [];
            for (smallUntil = index; smallUntil < live.length; smallUntil++) {
              const m = messages.get((live[smallUntil] as (typeof live)[number]).entry.pk);
              if (!m) continue;
              if (group.length && bytes + m.size > SMALL_SOURCES_BYTES) break;
              bytes += m.size;
              group.push(m);
            }
            small = await imap.smallSources(account, group, SMALL_SOURCES_BYTES);
          }
          if (flagsOnly) {
            const out: Node[] = [];
            for (const item of items)
              out.push(
                ...(item.name === 'UID' ? [atom('UID'), t.entry.uid] : [atom('FLAGS'), entryFlags(t.entry, selected)]),
              );
            this.respond('*', `${t.seq} FETCH`, [out]);
            await this.paced();
            if (this.closed) return;
            continue;
          }
          const message = messages?.get(t.entry.pk);
          if (!message) continue;
          let source: Buffer | undefined;
          let root: MimeEntity | undefined;
          if (needsSource && headerOnly) source = heads?.get(message.pk) ?? (await imap.sourceHead(account, message));
          else if (needsSource && structureOnly && message.size > SCAN_STRUCTURE_BYTES)
            ({ head: source, root } = (await imap.scanSource(account, message)) ?? {});
          else if (needsSource) source = await imap.source(account, message);
          root ??= source ? parseEntity(source) : undefined;
          const out: Node[] = [];
          for (const item of rest) out.push(...fetchItem(item, t.entry, message, selected, source, root, seen));
          if (streamed) {
            if (streamed.setsSeen && seen) out.push(atom('FLAGS'), entryFlags(t.entry, selected));
            const name = streamed.name === 'RFC822' ? 'RFC822' : 'BODY[]';
            await this.streamSource(t.seq, out, name, account, message, small.get(message.pk));
          } else this.respond('*', `${t.seq} FETCH`, [out]);
          await this.paced();
          if (this.closed) return;
        }
      }
      this.write(`${tag} OK ${byUid ? 'UID FETCH' : 'FETCH'} completed\r\n`);
    }

    /** `* n FETCH (… BODY[] {size}` then the stored pieces as they are read, then `)`. */
    private async streamSource(
      seq: number,
      out: Node[],
      name: string,
      account: ImapAccount,
      message: Message,
      raw: Buffer | undefined,
    ) {
      const opened = raw ? { size: raw.length, pieces: [raw] } : await imap.openSource(account, message);
      const head = compileResponse('*', `${seq} FETCH`, [out]);
      // The compiled list ends with its `)`: the streamed item goes before it.
      this.write(
        Buffer.concat([
          head.subarray(0, head.length - 1),
          Buffer.from(`${out.length ? ' ' : ''}${name} {${opened?.size ?? 0}}\r\n`),
        ]),
      );
      let written = 0;
      try {
        for await (const piece of opened?.pieces ?? []) {
          written += piece.length;
          this.write(piece);
          await this.paced();
          if (this.closed) return;
        }
      } catch (err) {
        // The literal promised bytes that are gone: nothing can follow on this connection.
        log.warn({ err: err instanceof Error ? err.message : String(err) }, 'imap: source vanished while streamed');
        this.destroy();
        return;
      }
      if (written !== (opened?.size ?? 0)) {
        this.destroy();
        return;
      }
      this.write(')\r\n');
    }

    private async search(
      tag: string,
      byUid: boolean,
      args: ParsedAttribute[],
      account: ImapAccount,
      selected: Selected,
    ) {
      if (this.dirty) await this.sync(byUid);
      let criteria = args;
      if (!Array.isArray(criteria[0]) && String(criteria[0]?.value ?? '').toUpperCase() === 'CHARSET') {
        const charset = text(criteria[1]).toUpperCase();
        if (!['UTF-8', 'US-ASCII'].includes(charset))
          throw new ImapNoError('BADCHARSET (UTF-8 US-ASCII)', 'Unsupported charset');
        criteria = criteria.slice(2);
      }
      const query = parseSearch(criteria);
      const live = selected.entries
        .map((entry, i) => ({ seq: i + 1, entry }))
        .filter((t) => !selected.gone.has(t.entry.uid));
      const leaves = searchLeaves(query);
      const texts = new Map<string, Set<number>>();
      for (const key of leaves) {
        if (key.op !== 'text' || texts.has(key.value)) continue;
        // Drafts are no messages: their keys are drafts', searched in their own fields.
        const found =
          selected.folder === 'Drafts'
            ? await imap.searchDrafts(
                account,
                live.map((t) => t.entry.pk),
                key.value,
              )
            : await imap.searchText(account, key.value, selected.folder);
        texts.set(key.value, found);
      }
      const needsMessage = leaves.some((k) => ['field', 'header', 'date', 'size'].includes(k.op));
      const needsHeaders = leaves.some((k) => k.op === 'header');
      const hits: number[] = [];
      const ctx: SearchContext = { selected, texts, max: selected.entries.length };
      for (let i = 0; i < live.length; i += FETCH_BATCH) {
        const batch = live.slice(i, i + FETCH_BATCH);
        const messages = needsMessage
          ? await imap.messages(
              account,
              batch.map((t) => t.entry.pk),
              selected.folder,
            )
          : new Map<number, Message>();
        for (const t of batch) {
          const message = messages.get(t.entry.pk);
          const headers = needsHeaders && message ? await headersOf(imap, account, message) : undefined;
          if (matches(query, { ...t, message, headers }, ctx)) hits.push(byUid ? t.entry.uid : t.seq);
        }
      }
      this.write(
        `* SEARCH${hits.length ? ` ${hits.join(' ')}` : ''}\r\n${tag} OK ${byUid ? 'UID SEARCH' : 'SEARCH'} completed\r\n`,
      );
    }

    private async store(
      tag: string,
      byUid: boolean,
      args: ParsedAttribute[],
      account: ImapAccount,
      selected: Selected,
    ) {
      if (selected.readOnly) throw new ImapNoError('READ-ONLY', 'The folder is open read-only.');
      if (this.dirty) await this.sync(byUid);
      const targets = this.resolve(selected, text(args[0]), byUid).filter((t) => !selected.gone.has(t.entry.uid));
      const m = /^([+-]?)FLAGS(\.SILENT)?$/i.exec(text(args[1]));
      if (!m) throw new BadCommand('STORE takes FLAGS, +FLAGS or -FLAGS');
      const mode = m[1] as '' | '+' | '-';
      const silent = !!m[2];
      const list = Array.isArray(args[2]) ? args[2] : args.slice(2);
      const flags = list.map((f) => text(f as ParsedAttribute));
      const deleted = flags.some((f) => f.toLowerCase() === '\\deleted');
      const mapped = flags.map(labelOfFlag).filter((x): x is { label: string; addsLabel: boolean } => !!x);
      // One label change per distinct change (FLAGS replaces, so it differs per message).
      const groups = new Map<string, { change: LabelChange; pks: number[] }>();
      for (const t of targets) {
        let change: LabelChange;
        if (mode === '+') change = toChange(mapped, true);
        else if (mode === '-') change = toChange(mapped, false);
        else change = replaceChange(t.entry.labels, mapped);
        const key = JSON.stringify(change);
        const g = groups.get(key) ?? { change, pks: [] };
        g.pks.push(t.entry.pk);
        groups.set(key, g);
      }
      const after = new Map<number, string[]>();
      // In Drafts only \Deleted counts, kept by the session as everywhere: drafts have no labels
      // flags stand for (always \Seen), and their keys are no messages' (decision 0045).
      for (const g of selected.folder === 'Drafts' ? [] : groups.values()) {
        if (!g.change.add.length && !g.change.remove.length) continue;
        for (const [pk, labels] of await imap.relabel(account, g.pks, g.change)) after.set(pk, labels);
      }
      const lines: string[] = [];
      for (const t of targets) {
        if (mode === '+' && deleted) selected.deleted.add(t.entry.uid);
        else if (mode === '-' && deleted) selected.deleted.delete(t.entry.uid);
        else if (mode === '') {
          if (deleted) selected.deleted.add(t.entry.uid);
          else selected.deleted.delete(t.entry.uid);
        }
        const labels = after.get(t.entry.pk);
        if (labels) {
          t.entry = { ...t.entry, labels };
          selected.entries[t.seq - 1] = t.entry;
        }
        if (!silent) lines.push(this.flagsLine(t.seq, t.entry, selected));
      }
      if (lines.length) this.write(`${lines.join('\r\n')}\r\n`);
      this.write(`${tag} OK ${byUid ? 'UID STORE' : 'STORE'} completed\r\n`);
    }

    private async move(tag: string, byUid: boolean, args: ParsedAttribute[], account: ImapAccount, selected: Selected) {
      if (selected.readOnly) throw new ImapNoError('READ-ONLY', 'The folder is open read-only.');
      if (selected.folder === 'Drafts')
        throw new ImapNoError('CANNOT', 'Drafts cannot be moved or copied; send them, or delete them (EXPUNGE).');
      if (this.dirty) await this.sync(true);
      const targets = this.resolve(selected, text(args[0]), byUid).filter((t) => !selected.gone.has(t.entry.uid));
      const to = this.folderArg(args[1], account);
      if (to === selected.folder) throw new ImapNoError('CANNOT', 'The message is in that folder already.');
      const uids = await imap.move(
        account,
        selected.folder,
        to,
        targets.map((t) => t.entry.pk),
      );
      const moved = targets.filter((t) => uids.has(t.entry.pk));
      // Received mail has no place in Sent, nor sent mail in INBOX: the labels say where a message is.
      if (targets.length && !moved.length) {
        await this.sync(true);
        throw new ImapNoError('CANNOT', `These messages cannot be moved to ${to}.`);
      }
      if (moved.length) {
        // UIDVALIDITY is the inbox's, the same in every folder: the target is not read whole for it.
        this.write(
          `* OK [COPYUID ${uidValidityOf(account.inbox)} ${moved.map((t) => t.entry.uid).join(',')} ${moved.map((t) => uids.get(t.entry.pk)).join(',')}] Moved\r\n`,
        );
      }
      await this.sync(true);
      this.write(`${tag} OK ${byUid ? 'UID MOVE' : 'MOVE'} completed\r\n`);
    }

    private async expunge(tag: string, account: ImapAccount, selected: Selected, uidSet: string | undefined) {
      if (selected.readOnly) throw new ImapNoError('READ-ONLY', 'The folder is open read-only.');
      const inSet = uidSet === undefined ? () => true : sequenceSet(uidSet, selected.uidNext);
      const uids = [...selected.deleted].filter(inSet);
      await this.expungeMarked(account, selected, uids);
      await this.sync(true);
      this.write(`${tag} OK ${uidSet === undefined ? 'EXPUNGE' : 'UID EXPUNGE'} completed\r\n`);
    }

    /** The marked messages `uids` out of the folder: drafts deleted, messages to the Trash or gone. */
    private async expungeMarked(account: ImapAccount, selected: Selected, uids: readonly number[]) {
      if (selected.folder !== 'Drafts') return imap.expunge(account, selected.folder, this.pksOf(uids));
      const wanted = new Set(uids);
      return imap.expungeDrafts(
        account,
        selected.entries.filter((e) => wanted.has(e.uid) && !selected.gone.has(e.uid)),
      );
    }
  }

  function sameLabels(a: readonly string[], b: readonly string[]) {
    return a.length === b.length && a.every((l, i) => l === b[i]);
  }

  const onConnection = (secure: boolean) => (socket: net.Socket) => {
    const ip = socket.remoteAddress ?? '';
    if (closing || sessions.size >= config.maxConnections || (perIp.get(ip) ?? 0) >= config.maxConnectionsPerIp) {
      socket.on('error', () => undefined);
      socket.end('* BYE Too many connections; try again later\r\n');
      return;
    }
    perIp.set(ip, (perIp.get(ip) ?? 0) + 1);
    const session = new Session(socket, secure);
    sessions.add(session);
    session.greet();
  };

  const plainServer = net.createServer(onConnection(false));
  const tlsServer = secureContext
    ? tls.createServer(
        { ...tlsPair, SNICallback: (_name, cb) => cb(null, secureContext as tls.SecureContext) },
        onConnection(true),
      )
    : undefined;
  const listen = (server: net.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, config.host, () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const port = await listen(plainServer, config.port);
  let tlsPort: number | undefined;
  try {
    tlsPort = tlsServer ? await listen(tlsServer, config.tlsPort) : undefined;
  } catch (err) {
    plainServer.close();
    throw err;
  }
  const stopTlsReload = watchTls(
    config,
    (options) => {
      secureContext = tls.createSecureContext(options);
      tlsServer?.setSecureContext(options);
    },
    log,
    'imap',
  );

  return {
    host: config.host,
    port,
    tlsPort,
    foldersChanged(inboxIds) {
      const wanted = new Set(inboxIds);
      for (const s of sessions) if (s.account && wanted.has(s.account.inbox.inboxId)) s.changed();
    },
    dropKey(apiKeyId) {
      for (const s of sessions)
        if (s.account?.owner.apiKeyId === apiKeyId) {
          s.write('* BYE The API key was deleted or changed\r\n');
          s.end();
        }
    },
    async close() {
      if (closing) return;
      closing = true;
      stopTlsReload();
      const closed = Promise.all(
        [plainServer, tlsServer].map((s) => (s ? new Promise<void>((resolve) => s.close(() => resolve())) : undefined)),
      );
      for (const s of [...sessions]) {
        s.write('* BYE Server shutting down\r\n');
        s.destroy();
      }
      await closed;
    },
  };
}

// ---- FETCH items ------------------------------------------------------------------------------

interface FetchItem {
  readonly name: string;
  readonly section?: SectionRequest;
  readonly partial?: readonly number[];
  readonly peek?: boolean;
  readonly setsSeen?: boolean;
}

function fetchItems(arg: ParsedAttribute | undefined): FetchItem[] {
  if (!arg) throw new BadCommand('FETCH needs data items');
  const list = Array.isArray(arg) ? arg : [arg];
  const out: FetchItem[] = [];
  for (const a of list) {
    if (!a || Array.isArray(a)) throw new BadCommand('Invalid FETCH item');
    const name = String(a.value ?? '').toUpperCase();
    if (a.section !== undefined) {
      if (name !== 'BODY' && name !== 'BODY.PEEK') throw new BadCommand(`Invalid FETCH item ${name.slice(0, 40)}`);
      const section = parseSection(a.section);
      if (!section) throw new BadCommand('Invalid section');
      out.push({
        name: 'BODY[]',
        section,
        ...(a.partial ? { partial: a.partial } : {}),
        peek: name === 'BODY.PEEK',
        setsSeen: name === 'BODY',
      });
      continue;
    }
    switch (name) {
      case 'ALL':
        out.push({ name: 'FLAGS' }, { name: 'INTERNALDATE' }, { name: 'RFC822.SIZE' }, { name: 'ENVELOPE' });
        break;
      case 'FAST':
        out.push({ name: 'FLAGS' }, { name: 'INTERNALDATE' }, { name: 'RFC822.SIZE' });
        break;
      case 'FULL':
        out.push(
          { name: 'FLAGS' },
          { name: 'INTERNALDATE' },
          { name: 'RFC822.SIZE' },
          { name: 'ENVELOPE' },
          { name: 'BODY' },
        );
        break;
      case 'FLAGS':
      case 'UID':
      case 'INTERNALDATE':
      case 'RFC822.SIZE':
      case 'ENVELOPE':
      case 'BODYSTRUCTURE':
      case 'BODY':
      case 'RFC822.HEADER':
        out.push({ name });
        break;
      case 'RFC822':
      case 'RFC822.TEXT':
        out.push({ name, setsSeen: true });
        break;
      case 'MODSEQ':
      case 'X-GM-LABELS':
      default:
        throw new BadCommand(`Unknown FETCH item ${name.slice(0, 40)}`);
    }
  }
  return out;
}

function fetchItem(
  item: FetchItem,
  entry: FolderEntry,
  message: Message,
  selected: Selected,
  source: Buffer | undefined,
  root: ReturnType<typeof parseEntity> | undefined,
  seenSet: boolean,
): Node[] {
  const src = source ?? Buffer.alloc(0);
  const tree = root ?? parseEntity(src);
  switch (item.name) {
    case 'UID':
      return [atom('UID'), entry.uid];
    case 'FLAGS':
      return [atom('FLAGS'), entryFlags(entry, selected)];
    case 'INTERNALDATE':
      return [atom('INTERNALDATE'), str(internalDate(message.timestamp))];
    case 'RFC822.SIZE':
      return [atom('RFC822.SIZE'), message.size];
    case 'ENVELOPE':
      return [atom('ENVELOPE'), envelope(tree)];
    case 'BODYSTRUCTURE':
      return [atom('BODYSTRUCTURE'), bodyStructure(src, tree, true)];
    case 'BODY':
      return [atom('BODY'), bodyStructure(src, tree, false)];
    case 'RFC822':
      return [atom('RFC822'), literal(src), ...(seenSet ? flagsItem(entry, selected) : [])];
    case 'RFC822.HEADER':
      return [atom('RFC822.HEADER'), literal(src.subarray(tree.headerStart, tree.bodyStart))];
    case 'RFC822.TEXT':
      return [atom('RFC822.TEXT'), literal(src.subarray(tree.bodyStart, tree.bodyEnd))];
    default: {
      const section = item.section as SectionRequest;
      let bytes = sectionBytes(src, tree, section);
      let partialOrigin: number | undefined;
      if (item.partial) {
        const [start, length] = item.partial as [number, number | undefined];
        partialOrigin = start;
        bytes = bytes.subarray(
          Math.min(start, bytes.length),
          length === undefined ? undefined : Math.min(start + length, bytes.length),
        );
      }
      const name = {
        type: 'ATOM',
        value: 'BODY',
        section: section.name,
        ...(partialOrigin !== undefined ? { partial: [partialOrigin] } : {}),
      };
      return [name, literal(bytes), ...(item.setsSeen && seenSet ? flagsItem(entry, selected) : [])];
    }
  }
}

/** An entry's flags in the session: a draft's have `\Draft` (decision 0045), a marked one `\Deleted`. */
function entryFlags(entry: FolderEntry, selected: Selected): Node[] {
  return flagList(entry, selected.deleted.has(entry.uid), selected.folder === 'Drafts');
}

function flagsItem(entry: FolderEntry, selected: Selected): Node[] {
  return [atom('FLAGS'), entryFlags(entry, selected)];
}

// ---- SEARCH -----------------------------------------------------------------------------------

type SearchKey =
  | { op: 'all' }
  | { op: 'and'; keys: SearchKey[] }
  | { op: 'not'; key: SearchKey }
  | { op: 'or'; a: SearchKey; b: SearchKey }
  | { op: 'flag'; flag: string; set: boolean }
  | { op: 'deleted'; set: boolean }
  | { op: 'field'; field: 'from' | 'to' | 'cc' | 'bcc' | 'subject'; value: string }
  | { op: 'header'; name: string; value: string }
  | { op: 'text'; value: string }
  | { op: 'date'; cmp: 'before' | 'on' | 'since'; day: string }
  | { op: 'size'; cmp: 'larger' | 'smaller'; n: number }
  | { op: 'seq'; set: string; uid: boolean };

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

function searchDate(value: string): string {
  const m = /^"?(\d{1,2})-([A-Za-z]{3})-(\d{4})"?$/.exec(value);
  const month = m ? MONTHS.indexOf((m[2] as string).toLowerCase()) : -1;
  if (!m || month < 0) throw new BadCommand('Invalid date');
  return `${m[3]}-${String(month + 1).padStart(2, '0')}-${(m[1] as string).padStart(2, '0')}`;
}

function parseSearch(args: ParsedAttribute[]): SearchKey {
  let i = 0;
  const next = (): ParsedAttribute => {
    if (i >= args.length) throw new BadCommand('Incomplete SEARCH');
    return args[i++] as ParsedAttribute;
  };
  const key = (depth: number): SearchKey => {
    if (depth > 50) throw new BadCommand('SEARCH nests too deep');
    const a = next();
    if (Array.isArray(a)) return { op: 'and', keys: parseSearchList(a, depth + 1) };
    if (a?.type === 'SEQUENCE') return { op: 'seq', set: String(a.value), uid: false };
    const word = text(a).toUpperCase();
    if (/^[\d*][\d*:,]*$/.test(word)) return { op: 'seq', set: word, uid: false };
    switch (word) {
      case 'ALL':
      case 'NEW':
      case 'RECENT':
      case 'OLD':
        return word === 'ALL' || word === 'OLD' ? { op: 'all' } : { op: 'not', key: { op: 'all' } };
      case 'SEEN':
      case 'UNSEEN':
        return { op: 'flag', flag: '\\Seen', set: word === 'SEEN' };
      case 'FLAGGED':
      case 'UNFLAGGED':
        return { op: 'flag', flag: '\\Flagged', set: word === 'FLAGGED' };
      case 'ANSWERED':
      case 'UNANSWERED':
        return { op: 'flag', flag: '\\Answered', set: word === 'ANSWERED' };
      case 'DRAFT':
      case 'UNDRAFT':
        return { op: 'flag', flag: '\\Draft', set: word === 'DRAFT' };
      case 'DELETED':
      case 'UNDELETED':
        return { op: 'deleted', set: word === 'DELETED' };
      case 'KEYWORD':
      case 'UNKEYWORD':
        return { op: 'flag', flag: text(next()), set: word === 'KEYWORD' };
      case 'FROM':
      case 'TO':
      case 'CC':
      case 'BCC':
      case 'SUBJECT':
        return { op: 'field', field: word.toLowerCase() as 'from', value: text(next()) };
      case 'HEADER': {
        const name = text(next());
        return { op: 'header', name, value: text(next()) };
      }
      case 'BODY':
      case 'TEXT':
        return { op: 'text', value: text(next()) };
      case 'BEFORE':
      case 'ON':
      case 'SINCE':
      case 'SENTBEFORE':
      case 'SENTON':
      case 'SENTSINCE':
        return { op: 'date', cmp: word.replace('SENT', '').toLowerCase() as 'on', day: searchDate(text(next())) };
      case 'LARGER':
      case 'SMALLER': {
        const n = Number(text(next()));
        if (!Number.isInteger(n) || n < 0) throw new BadCommand('Invalid size');
        return { op: 'size', cmp: word.toLowerCase() as 'larger', n };
      }
      case 'UID':
        return { op: 'seq', set: text(next()), uid: true };
      case 'NOT':
        return { op: 'not', key: key(depth + 1) };
      case 'OR': {
        const first = key(depth + 1);
        return { op: 'or', a: first, b: key(depth + 1) };
      }
      default:
        throw new BadCommand(`Unknown SEARCH key ${word.slice(0, 40)}`);
    }
  };
  const keys: SearchKey[] = [];
  while (i < args.length) keys.push(key(0));
  if (!keys.length) throw new BadCommand('SEARCH needs criteria');
  return { op: 'and', keys };
}

function parseSearchList(list: ParsedAttribute[], depth: number): SearchKey[] {
  if (depth > 50) throw new BadCommand('SEARCH nests too deep');
  const parsed = parseSearch(list);
  return parsed.op === 'and' ? parsed.keys : [parsed];
}

/** The keys of a SEARCH that are no AND, OR nor NOT: what its evaluation will need. */
function searchLeaves(key: SearchKey): SearchKey[] {
  switch (key.op) {
    case 'and':
      return key.keys.flatMap(searchLeaves);
    case 'not':
      return searchLeaves(key.key);
    case 'or':
      return [...searchLeaves(key.a), ...searchLeaves(key.b)];
    default:
      return [key];
  }
}

async function headersOf(imap: ImapService, account: ImapAccount, message: Message) {
  const source = await imap.sourceHead(account, message);
  return source ? parseEntity(source).fields : [];
}

interface SearchContext {
  readonly selected: Selected;
  readonly texts: ReadonlyMap<string, Set<number>>;
  readonly max: number;
}

interface SearchTarget {
  readonly seq: number;
  readonly entry: FolderEntry;
  readonly message: Message | undefined;
  readonly headers: readonly (readonly [string, string])[] | undefined;
}

const contains = (haystack: string, needle: string) => haystack.toLowerCase().includes(needle.toLowerCase());

function matches(key: SearchKey, t: SearchTarget, ctx: SearchContext): boolean {
  switch (key.op) {
    case 'all':
      return true;
    case 'and':
      return key.keys.every((k) => matches(k, t, ctx));
    case 'not':
      return !matches(key.key, t, ctx);
    case 'or':
      return matches(key.a, t, ctx) || matches(key.b, t, ctx);
    case 'deleted':
      return ctx.selected.deleted.has(t.entry.uid) === key.set;
    case 'flag': {
      const has = flagList(t.entry, false, ctx.selected.folder === 'Drafts').some(
        (f) => (f as { value: string }).value.toLowerCase() === key.flag.toLowerCase(),
      );
      return has === key.set;
    }
    case 'seq': {
      const entries = ctx.selected.entries;
      const max = key.uid ? (entries.length ? (entries[entries.length - 1] as FolderEntry).uid : 0) : ctx.max;
      return sequenceSet(key.set, max)(key.uid ? t.entry.uid : t.seq);
    }
    case 'text':
      return ctx.texts.get(key.value)?.has(t.entry.pk) ?? false;
    case 'field': {
      const m = t.message;
      if (!m) return false;
      const value =
        key.field === 'from'
          ? m.from
          : key.field === 'subject'
            ? (m.subject ?? '')
            : (key.field === 'to' ? m.to : key.field === 'cc' ? m.cc : m.bcc).join(', ');
      return contains(value, key.value);
    }
    case 'header':
      return (t.headers ?? []).some(([n, v]) => n.toLowerCase() === key.name.toLowerCase() && contains(v, key.value));
    case 'date': {
      const day = t.message?.timestamp.slice(0, 10);
      if (!day) return false;
      return key.cmp === 'before' ? day < key.day : key.cmp === 'on' ? day === key.day : day >= key.day;
    }
    case 'size': {
      const size = t.message?.size ?? 0;
      return key.cmp === 'larger' ? size > key.n : size < key.n;
    }
  }
}

// ---- STORE ------------------------------------------------------------------------------------

function toChange(mapped: readonly { label: string; addsLabel: boolean }[], set: boolean): LabelChange {
  const add: string[] = [];
  const remove: string[] = [];
  for (const { label, addsLabel } of mapped) (addsLabel === set ? add : remove).push(label);
  return { add, remove };
}

/** FLAGS (…): the labels flags stand for become exactly those the list names. */
function replaceChange(
  labels: readonly string[],
  mapped: readonly { label: string; addsLabel: boolean }[],
): LabelChange {
  const wanted = toChange(mapped, true);
  const add = wanted.add.filter((l) => !labels.includes(l));
  const remove = [...wanted.remove.filter((l) => labels.includes(l))];
  // Every label a flag stands for that the list leaves out: unread comes back without \Seen.
  if (!mapped.some((m) => m.label === UNREAD_LABEL) && !labels.includes(UNREAD_LABEL)) add.push(UNREAD_LABEL);
  for (const l of labels) {
    const flag = labelOfFlag(l === 'starred' ? '\\Flagged' : l === 'answered' ? '\\Answered' : l);
    if (flag && flag.addsLabel && !mapped.some((m) => m.label === l) && l !== UNREAD_LABEL) remove.push(l);
  }
  return { add, remove };
}
