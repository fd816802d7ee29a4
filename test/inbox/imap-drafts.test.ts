import { AgentMail } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, organization, secretOf, unique } from './fixtures.js';
import { IMAP_ENV, RawImap, connect, imapPort } from '../support/imap.js';

/**
 * The Drafts folder of mail clients (decision 0045, "Drafts") with imapflow on both dialects: the
 * inbox's drafts listed under UIDs that hold while a draft does not change, a new UID when it
 * does, APPEND into Drafts making a draft through the draft service (its permission and rules),
 * EXPUNGE in Drafts deleting the drafts marked \Deleted through the draft service's delete (keys
 * with draft_delete; a read-only view for the others), and SEARCH TEXT in Drafts, Trash and Spam.
 */

type Org = Awaited<ReturnType<typeof organization>>;

describe.each(dialects)('IMAP Drafts (%s)', (dialect) => {
  let server: InboxTestServer;
  let org: Org;
  let inbox: string;
  let peer: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, jobPollMs: 20, env: IMAP_ENV });
    org = await organization(server, [unique('drafts'), unique('peer')]);
    [inbox, peer] = org.inboxes as [string, string];
  });

  afterAll(async () => {
    await server?.close();
  });

  it('lists the drafts made over REST, byte for byte the same at every fetch, and a new UID for a changed one', async () => {
    const first = await org.client.inboxes.drafts.create(inbox, {
      to: [peer],
      subject: 'Plan one',
      text: 'the first draft, with okapi in it',
      attachments: [{ filename: 'plan.txt', content: b64('hello draft') }],
    });
    const second = await org.client.inboxes.drafts.create(inbox, { to: [peer], subject: 'Plan two', text: 'second' });
    const client = await connect(server, inbox, org.key);
    try {
      const box = await client.mailboxOpen('Drafts');
      expect(box.exists).toBe(2);
      // The organization's key holds draft_delete: Drafts opens read-write (EXPUNGE deletes drafts).
      expect(box.readOnly).toBe(false);
      const fetched = [];
      for await (const m of client.fetch('1:*', { uid: true, envelope: true, bodyStructure: true, source: true }))
        fetched.push(m);
      expect(fetched.map((m) => m.envelope?.subject)).toEqual(['Plan one', 'Plan two']);
      const [one, two] = fetched as [(typeof fetched)[number], (typeof fetched)[number]];
      expect(two.uid).toBeGreaterThan(one.uid);
      expect(one.envelope?.from?.[0]?.address).toBe(inbox);
      expect(one.envelope?.to?.[0]?.address).toBe(peer);
      expect(one.bodyStructure?.type).toBe('multipart/mixed');
      expect(one.source?.toString()).toContain('okapi');
      expect(one.source?.toString()).toContain(b64('hello draft'));
      const again = await client.fetchOne(String(one.uid), { source: true, size: true }, { uid: true });
      expect(again && again.source?.equals(one.source as Buffer)).toBe(true);
      expect(again && again.size).toBe(one.source?.length);

      // A change is a new message to IMAP: the old UID goes, a higher one comes.
      await org.client.inboxes.drafts.update(inbox, first.draftId, { subject: 'Plan one, revised' });
      await client.noop();
      const after = [];
      for await (const m of client.fetch('1:*', { uid: true, envelope: true })) after.push(m);
      expect(after.map((m) => m.envelope?.subject)).toEqual(['Plan two', 'Plan one, revised']);
      expect(after[0]?.uid).toBe(two.uid);
      expect(after[1]?.uid).toBeGreaterThan(two.uid);

      // Sent or deleted: gone from Drafts.
      await org.client.inboxes.drafts.send(inbox, second.draftId, {});
      await org.client.inboxes.drafts.delete(inbox, first.draftId);
      await client.noop();
      expect(client.mailbox && client.mailbox.exists).toBe(0);
      const status = await client.status('Drafts', { messages: true, uidNext: true });
      expect(status).toMatchObject({ messages: 0 });
      expect(Number(status && status.uidNext)).toBeGreaterThan(Number(after[1]?.uid));
    } finally {
      await client.logout();
    }
  });

  it('APPEND into Drafts makes a draft REST lists, with its recipients, body and attachment', async () => {
    const boundary = 'b-drafts-1';
    const raw = [
      `From: Someone Else <someone@example.org>`,
      `To: ${peer}`,
      `Cc: Carol <carol@example.org>`,
      `Bcc: dave@example.org`,
      `Subject: From the mail client`,
      `MIME-Version: 1.0`,
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      ``,
      `--${boundary}`,
      `Content-Type: text/plain; charset=utf-8`,
      ``,
      `Written in Thunderbird, mentions quokka.`,
      `--${boundary}`,
      `Content-Type: text/plain; name="notes.txt"`,
      `Content-Disposition: attachment; filename="notes.txt"`,
      `Content-Transfer-Encoding: base64`,
      ``,
      b64('attached notes'),
      `--${boundary}--`,
      ``,
    ].join('\r\n');
    const client = await connect(server, inbox, org.key);
    try {
      const appended = await client.append('Drafts', raw, ['\\Draft', '\\Seen']);
      expect(appended && appended.uid).toBeGreaterThan(0);
      const listed = await org.client.inboxes.drafts.list(inbox);
      const made = listed.drafts.find((d) => d.subject === 'From the mail client');
      expect(made).toBeDefined();
      const draft = await org.client.inboxes.drafts.get(inbox, made?.draftId as string);
      expect(draft.to).toEqual([peer]);
      expect(draft.cc).toEqual(['Carol <carol@example.org>']);
      expect(draft.bcc).toEqual(['dave@example.org']);
      expect(draft.text?.trim()).toBe('Written in Thunderbird, mentions quokka.');
      expect(draft.attachments?.map((a) => a.filename)).toEqual(['notes.txt']);

      const box = await client.mailboxOpen('Drafts');
      expect(box.uidValidity).toBe(appended && appended.uidValidity);
      const shown = await client.fetchOne(String(appended && appended.uid), { envelope: true }, { uid: true });
      expect(shown && shown.envelope?.subject).toBe('From the mail client');
      // Drafts' From is the inbox's, whatever the client wrote.
      expect(shown && shown.envelope?.from?.[0]?.address).toBe(inbox);
      expect(await client.search({ body: 'quokka' }, { uid: true })).toEqual([appended && appended.uid]);
      expect(await client.search({ body: 'wombat' }, { uid: true })).toEqual([]);
      // A draft is not moved out of Drafts, nor copied.
      await expect(client.messageMove('1:*', 'INBOX')).resolves.toBe(false);
      await expect(client.messageCopy('1:*', 'INBOX')).resolves.toBe(false);
      await org.client.inboxes.drafts.delete(inbox, made?.draftId as string);
    } finally {
      await client.logout();
    }
  });

  it('APPEND into Drafts is refused without draft_create, for an invalid recipient, and beyond its size', async () => {
    const reader = secretOf(
      await org.client.apiKeys.create({ name: unique('reader'), permissions: { messageRead: true, draftRead: true } }),
    );
    const client = await connect(server, inbox, reader);
    try {
      const message = `To: ${peer}\r\nSubject: not allowed\r\n\r\nbody\r\n`;
      await expect(client.append('Drafts', message)).rejects.toMatchObject({
        serverResponseCode: 'NOPERM',
      });
    } finally {
      await client.logout();
    }
    const writer = await connect(server, inbox, org.key);
    try {
      await expect(writer.append('Drafts', 'To: not an address@@\r\nSubject: x\r\n\r\nbody\r\n')).rejects.toMatchObject(
        {
          serverResponseCode: 'CANNOT',
        },
      );
    } finally {
      await writer.logout();
    }
    expect((await org.client.inboxes.drafts.list(inbox)).count).toBe(0);
    // A synchronizing literal beyond the bound is refused before a byte of it is sent.
    const raw = await RawImap.open(imapPort(server));
    try {
      expect(await raw.command('a', `LOGIN ${inbox} ${org.key}`)).toMatch(/^a OK/m);
      raw.send('b APPEND Drafts {20000000}\r\n');
      expect(await raw.until(/^b .*\r\n/m)).toMatch(/^b BAD \[TOOBIG\] Literal too large/m);
      expect(await raw.command('c', 'NOOP')).toMatch(/^c OK NOOP completed/m);
    } finally {
      raw.close();
    }
  });

  /** Drafts of `address` made over REST with these subjects, in order; their ids and UIDs in Drafts. */
  async function drafts(address: string, subjects: string[]) {
    const made = [];
    for (const subject of subjects)
      made.push(await org.client.inboxes.drafts.create(address, { to: [peer], subject, text: subject }));
    return made;
  }

  async function subjectsOf(address: string): Promise<string[]> {
    const listed = await org.client.inboxes.drafts.list(address);
    return listed.drafts.map((d) => d.subject ?? '').sort();
  }

  async function clearDrafts(address: string) {
    for (const d of (await org.client.inboxes.drafts.list(address)).drafts)
      await org.client.inboxes.drafts.delete(address, d.draftId);
  }

  it('a saved draft replaces its older version: APPEND v2, UID STORE old +FLAGS \\Deleted, UID EXPUNGE old', async () => {
    await clearDrafts(inbox);
    const client = await connect(server, inbox, org.key);
    try {
      const v1 = await client.append('Drafts', `To: ${peer}\r\nSubject: Autosaved v1\r\n\r\nfirst words\r\n`, [
        '\\Draft',
        '\\Seen',
      ]);
      const box = await client.mailboxOpen('Drafts');
      expect(box.readOnly).toBe(false);
      expect(box.permanentFlags && [...box.permanentFlags]).toEqual(['\\Deleted']);
      const [old] = (await org.client.inboxes.drafts.list(inbox)).drafts;
      const v2 = await client.append('Drafts', `To: ${peer}\r\nSubject: Autosaved v2\r\n\r\nmore words\r\n`, [
        '\\Draft',
        '\\Seen',
      ]);
      expect(Number(v2 && v2.uid)).toBeGreaterThan(Number(v1 && v1.uid));
      // imapflow's delete by UID: UID STORE +FLAGS.SILENT (\Deleted), then UID EXPUNGE of the same UID.
      expect(await client.messageDelete(String(v1 && v1.uid), { uid: true })).toBe(true);
      expect(await subjectsOf(inbox)).toEqual(['Autosaved v2']);
      await expect(org.client.inboxes.drafts.get(inbox, old?.draftId as string)).rejects.toBeInstanceOf(
        AgentMail.NotFoundError,
      );
      expect(client.mailbox && client.mailbox.exists).toBe(1);
      const left = await client.fetchOne('1', { uid: true, envelope: true, flags: true });
      expect(left && left.uid).toBe(v2 && v2.uid);
      expect(left && [...(left.flags ?? [])]).toEqual(['\\Seen', '\\Draft']);
      expect(await client.search({ draft: true }, { uid: true })).toEqual([v2 && v2.uid]);
      expect(left && left.envelope?.subject).toBe('Autosaved v2');
    } finally {
      await client.logout();
    }
    await clearDrafts(inbox);
  });

  it('EXPUNGE answers the sequence numbers of the marked drafts, deletes nothing unmarked, and CLOSE deletes too', async () => {
    await clearDrafts(inbox);
    const made = await drafts(inbox, ['Seq one', 'Seq two', 'Seq three', 'Seq four']);
    const raw = await RawImap.open(imapPort(server));
    try {
      expect(await raw.command('a', `LOGIN ${inbox} ${org.key}`)).toMatch(/^a OK/m);
      expect(await raw.command('b', 'SELECT Drafts')).toMatch(/^b OK \[READ-WRITE\]/m);
      // Nothing marked: nothing goes.
      const none = await raw.command('c', 'EXPUNGE');
      expect(none).not.toMatch(/^\* \d+ EXPUNGE/m);
      expect(none).toMatch(/^c OK EXPUNGE completed/m);
      expect(await subjectsOf(inbox)).toHaveLength(4);
      // \Seen is accepted (drafts are always seen), \Flagged left: only \Deleted is the session's.
      expect(await raw.command('d', 'STORE 1:4 +FLAGS (\\Seen \\Flagged)')).toMatch(/^d OK/m);
      expect(await raw.command('e', 'STORE 1,3 +FLAGS (\\Deleted)')).toMatch(
        /^\* 1 FETCH \(UID \d+ FLAGS \(\\Seen \\Draft \\Deleted\)\)\r\n\* 3 FETCH/m,
      );
      const expunged = await raw.command('f', 'EXPUNGE');
      expect(expunged.match(/^\* \d+ EXPUNGE/gm)).toEqual(['* 3 EXPUNGE', '* 1 EXPUNGE']);
      expect(expunged).toMatch(/^f OK EXPUNGE completed/m);
      expect(await subjectsOf(inbox)).toEqual(['Seq four', 'Seq two']);
      for (const gone of [made[0], made[2]])
        await expect(org.client.inboxes.drafts.get(inbox, gone?.draftId as string)).rejects.toBeInstanceOf(
          AgentMail.NotFoundError,
        );
      // CLOSE deletes the marked ones, without EXPUNGE answers.
      expect(await raw.command('g', 'STORE 2 +FLAGS.SILENT (\\Deleted)')).toMatch(/^g OK/m);
      const closed = await raw.command('h', 'CLOSE');
      expect(closed).not.toMatch(/^\* \d+ EXPUNGE/m);
      expect(await subjectsOf(inbox)).toEqual(['Seq two']);
      // No MOVE nor COPY out of Drafts.
      expect(await raw.command('i', 'SELECT Drafts')).toMatch(/^i OK \[READ-WRITE\]/m);
      expect(await raw.command('j', 'MOVE 1 INBOX')).toMatch(/^j NO \[CANNOT\]/m);
      expect(await raw.command('k', 'COPY 1 INBOX')).toMatch(/^k NO \[CANNOT\]/m);
      expect(await subjectsOf(inbox)).toEqual(['Seq two']);
    } finally {
      raw.close();
    }
    await clearDrafts(inbox);
  });

  it('EXPUNGE leaves a draft changed since it was marked (a new revision, a new UID)', async () => {
    await clearDrafts(inbox);
    const [draft] = await drafts(inbox, ['Before the change']);
    const raw = await RawImap.open(imapPort(server));
    try {
      expect(await raw.command('a', `LOGIN ${inbox} ${org.key}`)).toMatch(/^a OK/m);
      expect(await raw.command('b', 'SELECT Drafts')).toMatch(/^b OK \[READ-WRITE\]/m);
      expect(await raw.command('c', 'STORE 1 +FLAGS (\\Deleted)')).toMatch(/^c OK/m);
      await org.client.inboxes.drafts.update(inbox, draft?.draftId as string, { subject: 'After the change' });
      expect(await raw.command('d', 'EXPUNGE')).toMatch(/^d OK/m);
      expect(await subjectsOf(inbox)).toEqual(['After the change']);
    } finally {
      raw.close();
    }
    await clearDrafts(inbox);
  });

  it('a key without draft_delete keeps Drafts read-only: STORE and EXPUNGE refused, nothing deleted', async () => {
    await clearDrafts(inbox);
    await drafts(inbox, ['Kept one', 'Kept two']);
    const reader = secretOf(
      await org.client.apiKeys.create({
        name: unique('no-delete'),
        permissions: {
          messageRead: true,
          messageUpdate: true,
          messageDelete: true,
          draftRead: true,
          draftCreate: true,
        },
      }),
    );
    const client = await connect(server, inbox, reader);
    try {
      const box = await client.mailboxOpen('Drafts');
      expect(box.readOnly).toBe(true);
      await expect(client.messageFlagsAdd('1:*', ['\\Flagged'])).resolves.toBe(false);
      await expect(client.messageDelete('1:*')).resolves.toBe(false);
    } finally {
      await client.logout();
    }
    const raw = await RawImap.open(imapPort(server));
    try {
      expect(await raw.command('a', `LOGIN ${inbox} ${reader}`)).toMatch(/^a OK/m);
      const selected = await raw.command('b', 'SELECT Drafts');
      expect(selected).toMatch(/^\* OK \[PERMANENTFLAGS \(\)\]/m);
      expect(selected).toMatch(/^b OK \[READ-ONLY\]/m);
      expect(await raw.command('c', 'UID STORE 1:* +FLAGS (\\Deleted)')).toMatch(/^c NO \[READ-ONLY\]/m);
      expect(await raw.command('d', 'UID EXPUNGE 1:*')).toMatch(/^d NO \[READ-ONLY\]/m);
      expect(await raw.command('e', 'EXPUNGE')).toMatch(/^e NO \[READ-ONLY\]/m);
      expect(await raw.command('f', 'CLOSE')).toMatch(/^f OK/m);
    } finally {
      raw.close();
    }
    expect(await subjectsOf(inbox)).toEqual(['Kept one', 'Kept two']);
    await clearDrafts(inbox);
  });

  it("another inbox's drafts are never reached, by UID nor by an inbox-scoped key", async () => {
    await clearDrafts(inbox);
    await clearDrafts(peer);
    await drafts(peer, ['Peer one', 'Peer two', 'Peer three']);
    await drafts(inbox, ['Own one']);
    const scoped = secretOf(await org.client.inboxes.apiKeys.create(inbox, { name: unique('scoped') }));
    for (const key of [org.key, scoped]) {
      const raw = await RawImap.open(imapPort(server));
      try {
        expect(await raw.command('a', `LOGIN ${inbox} ${key}`)).toMatch(/^a OK/m);
        expect(await raw.command('b', 'SELECT Drafts')).toMatch(/^\* 1 EXISTS/m);
        expect(await raw.command('c', 'UID STORE 1:* +FLAGS (\\Deleted)')).toMatch(/^c OK/m);
        expect(await raw.command('d', 'UID EXPUNGE 1:*')).toMatch(/^\* 1 EXPUNGE\r\nd OK/m);
      } finally {
        raw.close();
      }
      expect(await subjectsOf(peer)).toEqual(['Peer one', 'Peer three', 'Peer two']);
      await drafts(inbox, ['Own again']);
    }
    // A key of the inbox only cannot log in to the peer at all.
    const raw = await RawImap.open(imapPort(server));
    try {
      expect(await raw.command('a', `LOGIN ${peer} ${scoped}`)).toMatch(/^a NO/m);
    } finally {
      raw.close();
    }
    await clearDrafts(inbox);
    await clearDrafts(peer);
  });

  it('a key without draft_read has no Drafts folder', async () => {
    const reader = secretOf(
      await org.client.apiKeys.create({ name: unique('no-drafts'), permissions: { messageRead: true } }),
    );
    const client = await connect(server, inbox, reader);
    try {
      expect((await client.list()).map((f) => f.path)).not.toContain('Drafts');
      await expect(client.mailboxOpen('Drafts')).rejects.toThrow();
    } finally {
      await client.logout();
    }
  });

  it('SEARCH TEXT finds mail in Trash and Spam, as in INBOX', async () => {
    for (const word of ['capybaratrash', 'capybaraspam'])
      await org.client.inboxes.messages.send(peer, { to: inbox, subject: unique(word), text: `rare ${word}` });
    const listed = await org.client.inboxes.messages.list(inbox, { limit: 10 });
    const byWord = (w: string) => listed.messages.find((m) => m.subject?.startsWith(w))?.messageId as string;
    await org.client.inboxes.messages.update(inbox, byWord('capybaratrash'), { addLabels: ['trash'] });
    await org.client.inboxes.messages.update(inbox, byWord('capybaraspam'), { addLabels: ['spam'] });
    const client = await connect(server, inbox, org.key);
    try {
      await client.mailboxOpen('Trash');
      expect(await client.search({ body: 'capybaratrash' })).toEqual([1]);
      expect(await client.search({ text: 'capybaraspam' })).toEqual([]);
      await client.mailboxOpen('Spam');
      expect(await client.search({ body: 'capybaraspam' })).toEqual([1]);
      await client.mailboxOpen('INBOX');
      expect(await client.search({ body: 'capybaratrash' })).toEqual([]);
    } finally {
      await client.logout();
    }
  });
});
