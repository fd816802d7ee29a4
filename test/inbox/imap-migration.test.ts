import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { INBOX_MIGRATION_TABLE } from '../../src/inbox/migrations/index.js';
import { createInboxTestDatabase, dialects, startInboxServer } from '../support/inbox-server.js';
import { IMAP_ENV, connect } from '../support/imap.js';
import { organization, unique } from './fixtures.js';

/**
 * Migration 0016 on a database that already holds mail: every stored message gets its folders and
 * UIDs in the order it was stored, by the folder rule of core/folders.ts, and the counters go on
 * from there for mail that arrives later. The state before 0014 is made by undoing it (its tables
 * dropped, its row removed) on a database the service filled.
 */
describe.each(dialects)('IMAP folders of mail stored before migrations 0016 and 0018 (%s)', (dialect) => {
  it('gives existing mail and drafts their folders and UIDs, and new mail the next UID', async () => {
    const database = createInboxTestDatabase(dialect);
    let server = await startInboxServer({ database, jobPollMs: 20, env: IMAP_ENV });
    try {
      const org = await organization(server, [unique('old'), unique('peer')]);
      const [inbox, peer] = org.inboxes as [string, string];
      const client = server.client(org.key);
      const subjects = ['first', 'second', 'third', 'fourth'];
      for (const subject of subjects) await client.inboxes.messages.send(peer, { to: inbox, subject, text: subject });
      await client.inboxes.messages.send(inbox, { to: peer, subject: 'outgoing', text: 'out' });
      await client.inboxes.messages.send(inbox, { to: inbox, subject: 'to myself', text: 'self' });
      const listed = (await client.inboxes.messages.list(inbox, { limit: 20 })).messages;
      const idOf = (s: string) => listed.find((m) => m.subject === s)?.messageId as string;
      await client.inboxes.messages.update(inbox, idOf('second'), { addLabels: ['trash'] });
      await client.inboxes.messages.update(inbox, idOf('third'), { addLabels: ['spam'] });
      for (const subject of ['draft one', 'draft two'])
        await client.inboxes.drafts.create(inbox, { subject, to: [peer] });

      const db = server.service.database.db;
      await db.schema.dropTable('folder_messages').execute();
      await db.schema.dropTable('folder_counters').execute();
      // As before an upgrade from a version without 0016: the later migrations are not there either.
      await db.schema.dropTable('console_sessions').execute();
      await db.schema.dropIndex('drafts_imap_uid').execute();
      await db.schema.alterTable('drafts').dropColumn('imap_uid').execute();
      for (const column of ['text_blob', 'html_blob'] as const) {
        await db.schema.dropIndex(`messages_${column}`).execute();
        await db.schema.alterTable('messages').dropColumn(column).execute();
      }
      await sql`delete from ${sql.table(INBOX_MIGRATION_TABLE)} where name >= '0016_imap_folders'`.execute(db);
      await server.close();
      server = await startInboxServer({ database, jobPollMs: 20, env: IMAP_ENV });

      const imap = await connect(server, inbox, org.key);
      try {
        const folder = async (name: string) => {
          const box = await imap.mailboxOpen(name);
          const out: [number, string][] = [];
          if (box.exists)
            for await (const m of imap.fetch('1:*', { uid: true, envelope: true }))
              out.push([m.uid, m.envelope?.subject ?? '']);
          return { uidNext: box.uidNext, messages: out };
        };
        expect(await folder('INBOX')).toEqual({
          uidNext: 4,
          messages: [
            [1, 'first'],
            [2, 'fourth'],
            [3, 'to myself'],
          ],
        });
        expect(await folder('Sent')).toEqual({
          uidNext: 3,
          messages: [
            [1, 'outgoing'],
            [2, 'to myself'],
          ],
        });
        expect(await folder('Trash')).toEqual({ uidNext: 2, messages: [[1, 'second']] });
        expect(await folder('Spam')).toEqual({ uidNext: 2, messages: [[1, 'third']] });
        // Drafts stored before 0018: UIDs in the order they were stored, and the counter past them.
        expect(await folder('Drafts')).toEqual({
          uidNext: 3,
          messages: [
            [1, 'draft one'],
            [2, 'draft two'],
          ],
        });
        await server.client(org.key).inboxes.messages.send(peer, { to: inbox, subject: 'after', text: 'after' });
        const after = await folder('INBOX');
        expect(after.messages.at(-1)).toEqual([4, 'after']);
      } finally {
        await imap.logout();
      }
    } finally {
      await server.close();
      await database.drop();
    }
  });
});
