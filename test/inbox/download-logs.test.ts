import { afterAll, describe, expect, it } from 'vitest';
import { SECRET_SEGMENT_SHOWN } from '../../src/platform/log/logger.js';
import {
  createInboxTestDatabase,
  dialects,
  startInboxServer,
  runInboxProcess,
  type InboxTestDatabase,
} from '../support/inbox-server.js';

/**
 * Signed download URLs are capabilities (issue 13, item 9): the service's info logs show a
 * token's first characters at most. The service runs as `npm run start:inbox` runs it, so that
 * its real log output is read.
 */
describe.each(dialects)('%s: download tokens in the logs', (dialect) => {
  const databases: InboxTestDatabase[] = [];
  afterAll(async () => {
    for (const d of databases) await d.drop();
  });

  it('an info log line holds the first characters of a token, never the token', async () => {
    const database = createInboxTestDatabase(dialect);
    databases.push(database);
    // A real token, signed with the key stored in this database.
    const setup = await startInboxServer({ database });
    let downloadPath: string;
    try {
      const { key } = await setup.createKey();
      const client = setup.client(key);
      const inbox = await client.inboxes.create({ username: 'logs' });
      const sent = await client.inboxes.messages.send(inbox.inboxId, {
        to: inbox.inboxId,
        text: 'x',
        attachments: [{ filename: 'a.txt', content: 'QUJD' }],
      });
      const message = await client.inboxes.messages.get(inbox.inboxId, sent.messageId);
      const attachment = await client.inboxes.messages.getAttachment(
        inbox.inboxId,
        sent.messageId,
        message.attachments?.[0]?.attachmentId as string,
      );
      downloadPath = new URL(attachment.downloadUrl).pathname;
    } finally {
      await setup.close();
    }
    const token = downloadPath.slice('/v0/downloads/'.length);
    expect(token.length).toBeGreaterThan(40);

    const { run: service, base } = await runInboxProcess(database);
    const output = () => service.output();
    try {
      const deadline = Date.now() + 90_000;
      for (const p of [downloadPath, downloadPath.replace('/downloads/', '/%64ownloads/'), `${downloadPath}?x=1`]) {
        const res = await fetch(`${base}${p}`);
        expect([p, res.status]).toEqual([p, 200]);
        expect(await res.text()).toBe('ABC');
      }
      while (output().split('"statusCode":200').length < 4) {
        if (Date.now() > deadline) throw new Error(`no request lines:\n${output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    const lines = output()
      .split('\n')
      .filter((l) => l.includes('/downloads/'));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(output()).toContain(`"url":"/v0/downloads/${token.slice(0, SECRET_SEGMENT_SHOWN)}…"`);
    // Neither the token nor its signature half (nor a long piece of either) is anywhere.
    for (const piece of [token, ...token.split('.'), token.slice(SECRET_SEGMENT_SHOWN, SECRET_SEGMENT_SHOWN + 12)])
      expect(output()).not.toContain(piece);
    // Two service starts, one of them a process compiling TypeScript as it loads: room on a busy machine.
  }, 120_000);
});
