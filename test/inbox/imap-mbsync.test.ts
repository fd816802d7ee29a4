import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { IMAP_ENV, imapPort } from '../support/imap.js';
import { organization, unique } from './fixtures.js';

/**
 * A full mailbox sync with mbsync (isync), an independent IMAP client that trusts UIDs and
 * UIDVALIDITY completely (decision 0045): the second sync in a row changes nothing, and a label
 * changed over REST arrives as a Maildir flag at the next one.
 */

const run = promisify(execFile);

const hasMbsync = (() => {
  try {
    execFileSync('mbsync', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** Every file of a Maildir tree with its contents, by path (sync state files included). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[path.relative(dir, p)] = readFileSync(p, 'latin1');
    }
  };
  walk(dir);
  return out;
}

describe.each(dialects)('IMAP with mbsync (%s)', (dialect) => {
  let server: InboxTestServer;
  let dir: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, jobPollMs: 20, env: IMAP_ENV });
    dir = mkdtempSync(path.join(tmpdir(), 'imap-mbsync-'));
  });

  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(!hasMbsync)(
    'syncs the whole mailbox; a second sync changes nothing; a REST label change arrives as a flag',
    async () => {
      const org = await organization(server, [unique('mbs'), unique('peer')]);
      const [inbox, peer] = org.inboxes as [string, string];
      for (let i = 0; i < 3; i++)
        await org.client.inboxes.messages.send(peer, { to: inbox, subject: `sync ${i}`, text: `body ${i}` });
      await org.client.inboxes.messages.send(inbox, { to: peer, subject: 'sync sent', text: 'sent' });
      const maildir = path.join(dir, 'mail');
      mkdirSync(maildir);
      const rc = path.join(dir, 'mbsyncrc');
      writeFileSync(
        rc,
        [
          'IMAPAccount agent',
          'Host 127.0.0.1',
          `Port ${imapPort(server)}`,
          `User ${inbox}`,
          `Pass ${org.key}`,
          'SSLType None',
          'AuthMechs LOGIN',
          '',
          'IMAPStore far',
          'Account agent',
          '',
          'MaildirStore near',
          `Path ${maildir}/`,
          `Inbox ${maildir}/INBOX`,
          'SubFolders Verbatim',
          '',
          'Channel all',
          'Far :far:',
          'Near :near:',
          'Patterns *',
          'Create Near',
          'Sync All',
          'SyncState *',
          '',
        ].join('\n'),
      );
      const sync = () => run('mbsync', ['-c', rc, '-a']);
      await sync();
      const first = snapshot(maildir);
      const messages = (box: string) =>
        Object.keys(first).filter((p) => p.startsWith(`${box}/new/`) || p.startsWith(`${box}/cur/`));
      expect(messages('INBOX')).toHaveLength(3);
      expect(messages('Sent')).toHaveLength(1);
      expect(messages('Trash')).toHaveLength(0);

      await sync();
      expect(snapshot(maildir)).toEqual(first);
      const labels = (await org.client.inboxes.messages.list(inbox, { limit: 10 })).messages.map((m) => [
        m.subject,
        [...m.labels].sort(),
      ]);

      // Read over REST: the next sync marks the Maildir file seen (",S" in its name), nothing else.
      const one = (await org.client.inboxes.messages.list(inbox, { limit: 10 })).messages.find(
        (m) => m.subject === 'sync 1',
      );
      await org.client.inboxes.messages.update(inbox, one?.messageId as string, { removeLabels: ['unread'] });
      await sync();
      const third = snapshot(maildir);
      const seen = Object.keys(third).filter((p) => p.startsWith('INBOX/') && /,[A-Z]*S[A-Z]*$/.test(p));
      expect(seen).toHaveLength(1);
      expect(third[seen[0] as string]).toContain('Subject: sync 1');
      const after = (await org.client.inboxes.messages.list(inbox, { limit: 10 })).messages.map((m) => [
        m.subject,
        [...m.labels].sort(),
      ]);
      expect(after.filter(([s]) => s !== 'sync 1')).toEqual(labels.filter(([s]) => s !== 'sync 1'));
    },
  );
});
