import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { organization, unique } from './fixtures.js';
import type { ImapFlow } from 'imapflow';
import { IMAP_ENV, connect } from '../support/imap.js';

/**
 * IMAP for mail clients (decision 0045) with imapflow, a real client, on both dialects: login with
 * an inbox address and an API key, LIST with special-use, SELECT, FETCH, SEARCH, STORE, MOVE and
 * IDLE, and every change seen by the REST API as the same labels (and the reverse).
 */

type Org = Awaited<ReturnType<typeof organization>>;

/**
 * The next `event` of `client` that `check` accepts, with whether the client was still in IDLE when
 * it came (it had sent nothing since: the server pushed it). No clock: a notification that never
 * comes fails the test at vitest's timeout; how fast it comes is bench:imap's (idle).
 */
function nextEvent<T>(client: ImapFlow, event: string, check: (e: T) => boolean): Promise<{ idling: boolean }> {
  return new Promise((resolve) => {
    const listener = (e: T) => {
      if (!check(e)) return;
      client.off(event, listener);
      resolve({ idling: client.idling });
    };
    client.on(event, listener);
  });
}

describe.each(dialects)('IMAP with imapflow (%s)', (dialect) => {
  let server: InboxTestServer;
  let org: Org;
  let inbox: string;
  let peer: string;
  const subjects: string[] = [];

  beforeAll(async () => {
    server = await startInboxServer({ dialect, jobPollMs: 20, env: IMAP_ENV });
    org = await organization(server, [unique('imap'), unique('peer')]);
    [inbox, peer] = org.inboxes as [string, string];
    for (const word of ['alpha', 'bravo', 'charlie']) {
      const subject = unique(`${word}-`);
      subjects.push(subject);
      await org.client.inboxes.messages.send(peer, {
        to: inbox,
        subject,
        text: `Hello ${word}, the rare word is zebrafish${word}.`,
        html: `<p>Hello <b>${word}</b></p>`,
      });
    }
    await org.client.inboxes.messages.send(inbox, { to: peer, subject: unique('sent-'), text: 'from the inbox' });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('logs in with the inbox address and an API key, and refuses a wrong key', async () => {
    const client = await connect(server, inbox, org.key);
    expect(client.authenticated).toBeTruthy();
    await client.logout();
    await expect(connect(server, inbox, 'am_wrong')).rejects.toThrow();
    await expect(connect(server, peer.replace(/^/, 'nobody'), org.key)).rejects.toThrow();
  });

  it('lists the five folders with their special-use attributes', async () => {
    const client = await connect(server, inbox, org.key);
    try {
      const list = await client.list();
      const byPath = Object.fromEntries(list.map((f) => [f.path, f.specialUse ?? null]));
      expect(byPath).toEqual({
        INBOX: '\\Inbox',
        Sent: '\\Sent',
        Trash: '\\Trash',
        Spam: '\\Junk',
        Drafts: '\\Drafts',
      });
      const status = await client.status('INBOX', { messages: true, unseen: true, uidNext: true, uidValidity: true });
      if (!status) throw new Error('no STATUS');
      expect(status.messages).toBe(3);
      expect(status.unseen).toBe(3);
      expect(status.uidNext).toBe(4);
    } finally {
      await client.logout();
    }
  });

  it('selects INBOX and fetches envelopes, structure, flags and bodies', async () => {
    const client = await connect(server, inbox, org.key);
    try {
      const box = await client.mailboxOpen('INBOX');
      expect(box.exists).toBe(3);
      expect(Number(box.uidValidity)).toBeGreaterThan(0);
      const seen: { uid: number; subject?: string; flags: string[]; type?: string }[] = [];
      for await (const m of client.fetch('1:*', {
        uid: true,
        envelope: true,
        flags: true,
        bodyStructure: true,
        size: true,
        internalDate: true,
      }))
        seen.push({
          uid: m.uid,
          subject: m.envelope?.subject,
          flags: [...(m.flags ?? [])],
          type: m.bodyStructure?.type,
        });
      expect(seen.map((m) => m.uid)).toEqual([1, 2, 3]);
      expect(seen.map((m) => m.subject)).toEqual(subjects);
      expect(seen.every((m) => m.flags.length === 0)).toBe(true);
      expect(seen[0]?.type).toBe('multipart/alternative');

      const one = await client.fetchOne('2', { source: true, headers: ['subject'], bodyParts: ['1'] }, { uid: true });
      expect(one && one.source?.toString()).toContain(`Subject: ${subjects[1]}`);
      expect(one && one.headers?.toString()).toMatch(new RegExp(`^Subject: ${subjects[1]}\\r\\n\\r\\n$`));
      expect(one && one.bodyParts?.get('1')?.toString()).toContain('zebrafishbravo');
      // BODY.PEEK leaves it unread; a partial fetch gives the bytes asked for.
      const partial = await client.download('1', undefined, { uid: true, maxBytes: 10 });
      expect(partial.meta).toBeDefined();
      const stillUnread = await client.fetchOne('2', { flags: true }, { uid: true });
      expect(stillUnread && [...(stillUnread.flags ?? [])]).toEqual([]);
    } finally {
      await client.logout();
    }
  });

  it('searches flags, headers, dates and text through the full-text index', async () => {
    const client = await connect(server, inbox, org.key);
    try {
      await client.mailboxOpen('INBOX');
      expect(await client.search({ seen: false }, { uid: true })).toEqual([1, 2, 3]);
      expect(await client.search({ subject: subjects[2] as string }, { uid: true })).toEqual([3]);
      expect(await client.search({ body: 'zebrafishcharlie' }, { uid: true })).toEqual([3]);
      expect(await client.search({ since: new Date(Date.now() - 86_400_000) }, { uid: true })).toEqual([1, 2, 3]);
      expect(await client.search({ before: new Date(Date.now() - 86_400_000) }, { uid: true })).toEqual([]);
      expect(await client.search({ header: { subject: subjects[0] as string } }, { uid: true })).toEqual([1]);
    } finally {
      await client.logout();
    }
  });

  it('STORE changes labels as REST sees them, with their events', async () => {
    const client = await connect(server, inbox, org.key);
    try {
      await client.mailboxOpen('INBOX');
      await client.messageFlagsAdd('1', ['\\Seen', '\\Flagged', 'Work'], { uid: true });
      const listed = await org.client.inboxes.messages.list(inbox, { limit: 10 });
      const first = listed.messages.find((m) => m.subject === subjects[0]);
      expect(first?.labels).toEqual(expect.arrayContaining(['starred', 'Work']));
      expect(first?.labels).not.toContain('unread');
      const { events } = await org.client.inboxes.events.list(inbox, { ascending: true, limit: 100 });
      expect(events.map((e) => `${e.eventType} ${e.label}`)).toEqual(
        expect.arrayContaining(['label.removed unread', 'label.added starred', 'label.added Work']),
      );
      await client.messageFlagsRemove('1', ['\\Seen'], { uid: true });
      const back = await org.client.inboxes.messages.get(inbox, first?.messageId as string);
      expect(back.labels).toContain('unread');
    } finally {
      await client.logout();
    }
  });

  it('MOVE to Trash is the trash label in REST, with a new UID there', async () => {
    const client = await connect(server, inbox, org.key);
    try {
      await client.mailboxOpen('INBOX');
      const moved = await client.messageMove('3', 'Trash', { uid: true });
      expect(moved && moved.uidMap?.get(3)).toBe(1);
      expect((await client.status('INBOX', { messages: true })) || undefined).toMatchObject({ messages: 2 });
      const trashed = await org.client.inboxes.messages.list(inbox, { labels: ['trash'], limit: 10 });
      expect(trashed.messages.map((m) => m.subject)).toEqual([subjects[2]]);
      // Back from the Trash: a new UID in INBOX, never the old one.
      await client.mailboxOpen('Trash');
      const back = await client.messageMove('1', 'INBOX', { uid: true });
      expect(back && back.uidMap?.get(1)).toBe(4);
    } finally {
      await client.logout();
    }
  });

  it('tells an IDLE-ing client of REST changes (flags, new mail) while it idles, unasked', async () => {
    const client = await connect(server, inbox, org.key);
    try {
      await client.mailboxOpen('INBOX');
      void client.idle();
      await new Promise((r) => setTimeout(r, 100));
      const listed = await org.client.inboxes.messages.list(inbox, { limit: 10 });
      const target = listed.messages.find((m) => m.subject === subjects[1]);
      const seen = nextEvent<{ flags: Set<string> }>(client, 'flags', (e) => e.flags.has('\\Seen'));
      await org.client.inboxes.messages.update(inbox, target?.messageId as string, { removeLabels: ['unread'] });
      expect(await seen).toEqual({ idling: true });
      const exists = nextEvent<{ count: number }>(client, 'exists', () => true);
      await org.client.inboxes.messages.send(peer, { to: inbox, subject: unique('late-'), text: 'new' });
      expect(await exists).toEqual({ idling: true });
    } finally {
      await client.logout();
    }
  });

  it('streams a large message stored as a blob, whole and in ranges, byte for byte as REST serves it', async () => {
    const big = 'lorem ipsum dolor sit amet '.repeat(30_000);
    await org.client.inboxes.messages.send(peer, { to: inbox, subject: unique('big-'), text: big });
    const stored = (await org.client.inboxes.messages.list(inbox, { limit: 20 })).messages.find(
      (m) => m.subject !== null && m.size > 600_000,
    );
    expect(stored).toBeDefined();
    const raw = Buffer.from(
      await (
        await fetch((await org.client.inboxes.messages.getRaw(inbox, stored?.messageId as string)).downloadUrl)
      ).arrayBuffer(),
    );
    expect(raw.length).toBeGreaterThan(600_000);
    const client = await connect(server, inbox, org.key);
    try {
      const box = await client.mailboxOpen('INBOX');
      const uid = box.uidNext - 1;
      const whole = await client.fetchOne(String(uid), { source: true, size: true }, { uid: true });
      expect(whole && whole.size).toBe(raw.length);
      expect(whole && whole.source?.equals(raw)).toBe(true);
      // A header sync reads the first pieces only, and still gives the whole message's size.
      const head = await client.fetchOne(
        String(uid),
        { envelope: true, headers: ['subject'], size: true },
        { uid: true },
      );
      expect(head && head.envelope?.subject).toBe(stored?.subject);
      expect(head && head.headers?.toString()).toBe(`Subject: ${stored?.subject}\r\n\r\n`);
      expect(head && head.size).toBe(raw.length);
      // Its structure, read piece by piece: the body's size and lines as the source has them.
      const structure = await client.fetchOne(String(uid), { bodyStructure: true, envelope: true }, { uid: true });
      const blank = raw.indexOf('\r\n\r\n');
      const body = raw.subarray(blank + 4);
      expect(structure && structure.bodyStructure).toMatchObject({
        type: 'text/plain',
        size: body.length,
        lineCount: body.toString('latin1').split('\n').length - (body.at(-1) === 0x0a ? 1 : 0),
      });
      expect(structure && structure.envelope?.subject).toBe(stored?.subject);
      const part = await client.fetchOne(String(uid), { bodyParts: ['1'] }, { uid: true });
      expect(part && part.bodyParts?.get('1')?.length).toBeGreaterThan(600_000);
      const range = await client.fetchOne(String(uid), { source: { start: 300_000, maxLength: 1000 } }, { uid: true });
      expect(range && range.source?.equals(raw.subarray(300_000, 301_000))).toBe(true);
    } finally {
      await client.logout();
    }
  });

  it('tells an IDLE-ing client of a change another IMAP client made, and ends the sessions of a deleted key', async () => {
    const created = await org.client.apiKeys.create({ name: unique('imap-key') });
    const key = (created as { apiKey: string; apiKeyId: string }).apiKey;
    const watcher = await connect(server, inbox, org.key);
    const actor = await connect(server, inbox, key);
    try {
      await watcher.mailboxOpen('INBOX');
      await actor.mailboxOpen('INBOX');
      void watcher.idle();
      await new Promise((r) => setTimeout(r, 100));
      const urgent = nextEvent<{ flags: Set<string> }>(watcher, 'flags', (e) => e.flags.has('Urgent'));
      await actor.messageFlagsAdd('1', ['Urgent'], { uid: true });
      expect(await urgent).toEqual({ idling: true });
      const closed = new Promise<void>((resolve) => actor.once('close', () => resolve()));
      await org.client.apiKeys.delete((created as { apiKeyId: string }).apiKeyId);
      await closed;
    } finally {
      await watcher.logout();
      actor.close();
    }
  });

  it('an inbox-scoped key cannot open another inbox', async () => {
    const scoped = await org.client.inboxes.apiKeys.create(inbox, { name: 'imap-scoped' });
    const key = (scoped as { apiKey: string }).apiKey;
    const own = await connect(server, inbox, key);
    await own.logout();
    await expect(connect(server, peer, key)).rejects.toThrow();
  });
});
