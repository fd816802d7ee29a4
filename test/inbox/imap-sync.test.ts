import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { organization, unique } from './fixtures.js';
import { IMAP_ENV, RawImap, imapPort } from '../support/imap.js';

/**
 * The incremental resync of a selected folder (decision 0052): after SELECT a session reads only
 * the rows written since the folder's modseq it knew, and counts the rest to find what is gone.
 * What a NOOP tells a client must leave it with the very folder a fresh SELECT shows, with
 * EXPUNGE sequence numbers that count the messages still known, on both dialects.
 */

type Org = Awaited<ReturnType<typeof organization>>;

/** `* n FETCH (UID u FLAGS (…))` lines of a response as [seq, uid, flags] in order. */
function fetched(response: string): [number, number, string][] {
  return [...response.matchAll(/^\* (\d+) FETCH \(UID (\d+) FLAGS \(([^)]*)\)\)/gm)].map((m) => [
    Number(m[1]),
    Number(m[2]),
    m[3] as string,
  ]);
}

/** The untagged lines of a response but its FETCH lines. */
function untagged(response: string): string[] {
  return response.split('\r\n').filter((l) => l.startsWith('* ') && !/^\* \d+ FETCH/.test(l));
}

describe.each(dialects)('IMAP incremental resync (%s)', (dialect) => {
  let server: InboxTestServer;
  let org: Org;
  let inbox: string;
  let peer: string;
  let tag = 0;
  const ids: string[] = [];

  async function session(): Promise<RawImap> {
    const raw = await RawImap.open(imapPort(server));
    expect(await raw.command(`t${++tag}`, `LOGIN "${inbox}" "${org.key}"`)).toMatch(/ OK /);
    return raw;
  }

  /** What a fresh session sees in INBOX: [uid, flags] by sequence number. */
  async function fresh(): Promise<[number, string][]> {
    const raw = await session();
    try {
      await raw.command(`t${++tag}`, 'SELECT INBOX');
      const all = fetched(await raw.command(`t${++tag}`, 'FETCH 1:* (UID FLAGS)'));
      all.forEach(([seq], i) => expect(seq).toBe(i + 1));
      return all.map(([, uid, flags]) => [uid, flags]);
    } finally {
      raw.close();
    }
  }

  async function send(text: string): Promise<string> {
    const subject = unique('sync-');
    await org.client.inboxes.messages.send(peer, { to: inbox, subject, text });
    const listed = await org.client.inboxes.messages.list(inbox, { limit: 50 });
    const own = listed.messages.find((m) => m.subject === subject);
    if (!own) throw new Error('not delivered');
    return own.messageId;
  }

  beforeAll(async () => {
    server = await startInboxServer({ dialect, jobPollMs: 20, env: IMAP_ENV });
    org = await organization(server, [unique('sync'), unique('peer')]);
    [inbox, peer] = org.inboxes as [string, string];
    for (let i = 1; i <= 5; i++) ids.push(await send(`message ${i}`));
  });

  afterAll(async () => {
    await server?.close();
  });

  it('NOOP reports REST changes made meanwhile: EXPUNGE by current sequence numbers, FLAGS, EXISTS', async () => {
    const watcher = await session();
    try {
      expect(await watcher.command(`t${++tag}`, 'SELECT INBOX')).toMatch(/^\* 5 EXISTS/m);
      // Message 2 read, 1 and 4 gone (one to the trash, one deleted for good), a new one delivered.
      await org.client.inboxes.messages.update(inbox, ids[1] as string, { removeLabels: ['unread'] });
      await org.client.inboxes.messages.update(inbox, ids[3] as string, { addLabels: ['trash'] });
      await org.client.inboxes.messages.delete(inbox, ids[0] as string);
      ids.push(await send('message 6'));
      const noop = await watcher.command(`t${++tag}`, 'NOOP');
      // Highest first: 4 is still the fourth when it goes, then 1.
      expect(untagged(noop)).toEqual(['* 4 EXPUNGE', '* 1 EXPUNGE', '* 4 EXISTS']);
      expect(fetched(noop)).toEqual([[1, 2, '\\Seen']]);
      // Nothing more to tell.
      expect(untagged(await watcher.command(`t${++tag}`, 'NOOP'))).toEqual([]);
      const seen = fetched(await watcher.command(`t${++tag}`, 'FETCH 1:* (UID FLAGS)')).map(
        ([, uid, flags]) => [uid, flags] as [number, string],
      );
      expect(seen).toEqual([
        [2, '\\Seen'],
        [3, ''],
        [5, ''],
        [6, ''],
      ]);
      expect(seen).toEqual(await fresh());
    } finally {
      watcher.close();
    }
  });

  it('an EXPUNGE in another session reaches this one at its NOOP, not within its FETCH; STORE on both stays in step', async () => {
    const watcher = await session();
    const actor = await session();
    try {
      await watcher.command(`t${++tag}`, 'SELECT INBOX');
      await actor.command(`t${++tag}`, 'SELECT INBOX');
      const before = await fresh();
      const [second, third] = [before[1]?.[0], before[2]?.[0]] as [number, number];
      // The actor deletes the second message and flags the third; the watcher flags the first.
      await actor.command(`t${++tag}`, `UID STORE ${second} +FLAGS (\\Deleted)`);
      await actor.command(`t${++tag}`, `UID STORE ${third} +FLAGS (\\Flagged)`);
      expect(await actor.command(`t${++tag}`, 'EXPUNGE')).toMatch(/^\* 2 EXPUNGE/m);
      await watcher.command(`t${++tag}`, 'STORE 1 +FLAGS.SILENT (\\Seen)');
      // A FETCH by sequence number may not shift them (RFC 3501 §7.4.1): the gone message is left out.
      const during = await watcher.command(`t${++tag}`, 'FETCH 1:* (UID FLAGS)');
      expect(during).not.toMatch(/EXPUNGE/);
      // (A FETCH FLAGS the session pushes for the actor's \Flagged may come first: one row per message.)
      expect([...new Map(fetched(during).map(([seq, uid]) => [seq, uid]))]).toEqual(
        before.filter(([uid]) => uid !== second).map(([uid]) => [before.findIndex(([u]) => u === uid) + 1, uid]),
      );
      const noop = await watcher.command(`t${++tag}`, 'NOOP');
      expect(untagged(noop)).toEqual(['* 2 EXPUNGE']);
      const now = fetched(await watcher.command(`t${++tag}`, 'FETCH 1:* (UID FLAGS)')).map(
        ([, uid, flags]) => [uid, flags] as [number, string],
      );
      expect(now).toEqual(await fresh());
      expect(now.find(([uid]) => uid === third)?.[1]).toBe('\\Flagged');
      // STATUS counts what a SELECT lists, without listing it.
      const status = await watcher.command(`t${++tag}`, 'STATUS INBOX (MESSAGES UNSEEN UIDNEXT)');
      const uidNext = Number(/UIDNEXT (\d+)/.exec(await watcher.command(`t${++tag}`, 'EXAMINE INBOX'))?.[1]);
      expect(status).toMatch(
        `* STATUS INBOX (MESSAGES ${now.length} UNSEEN ${now.filter(([, f]) => !f.includes('\\Seen')).length} UIDNEXT ${uidNext})`,
      );
      // The moved message is in the Trash (EXPUNGE outside it moves there), under a UID of its own.
      const trash = await session();
      try {
        expect(await trash.command(`t${++tag}`, 'EXAMINE Trash')).toMatch(/^\* 2 EXISTS/m);
      } finally {
        trash.close();
      }
    } finally {
      watcher.close();
      actor.close();
    }
  });
});
