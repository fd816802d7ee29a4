import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboxConfigSpec } from '../../src/inbox/inbox.config.js';
import { inboxMigrations, INBOX_MIGRATION_TABLE } from '../../src/inbox/migrations/index.js';
import {
  BLOB_CLAIMED,
  BLOB_DOOMED,
  BLOB_UNCLAIMED,
  BlobGoneError,
  CHUNK_BYTES,
  claimBlobs,
  readBlob,
  releaseBlobs,
  storeBlob,
  storeBlobPieces,
  UNCLAIMED_GRACE_MS,
} from '../../src/inbox/mailstore/message-blobs.js';
import { migrateInbox, openInboxDatabase } from '../../src/inbox/service.js';
import { loadConfig } from '../../src/platform/config/config.js';
import { commitsOf, type GroupCommit } from '../../src/platform/db/group-commit.js';
import type { InboxDatabase } from '../../src/inbox/schema/database.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import { createDelivery, type ComposedMessage } from '../../src/inbox/mailstore/delivery.service.js';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver } from '../support/smtp-client.js';
import { b64, call, enc, organization, unique } from './fixtures.js';

/**
 * Large bytes written ahead of their delivery as blobs (src/inbox/mailstore/message-blobs.ts,
 * docs/decisions/0027): what a delivery that stores no copy leaves behind, what the sweep takes
 * and keeps, and the move of migration 0012's pieces into blobs.
 */
describe.each(dialects)('%s: blobs of large bytes', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
  });
  afterAll(async () => {
    await server?.close();
  });

  const db = () => server.service.database.db;
  const count = async (table: 'blobs' | 'blob_chunks') =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const patterned = (length: number, seed: number) => {
    const bytes = Buffer.alloc(length);
    for (let i = 0; i < length; i++) bytes[i] = (i * seed) & 0xff;
    return bytes;
  };

  it("releases the blobs of a send the sender's lists refuse after they were written, and of SMTP mail every inbox already holds", async () => {
    const org = await organization(server, [unique('lists'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const before = { blobs: await count('blobs'), pieces: await count('blob_chunks') };
    expect((await call(server.url, org.key, 'POST', '/v0/lists/send/block', { entry: to })).status).toBeLessThan(300);
    const file = patterned(CHUNK_BYTES * 3, 31);
    const refused = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, {
      to,
      subject: 'refused',
      text: 'x',
      attachments: [{ filename: 'big.bin', content: b64(file) }],
    });
    expect(refused.status).toBe(400);
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);

    // The same large message twice over SMTP: the second finds it held, stores nothing and keeps no blob.
    const message = [
      `From: someone@sender.example`,
      `To: ${to}`,
      `Subject: twice`,
      `Message-ID: <${unique('twice')}@sender.example>`,
      'Content-Type: text/plain',
      '',
      'x'
        .repeat(76)
        .concat('\r\n')
        .repeat(Math.ceil((CHUNK_BYTES * 2) / 78)),
      '',
    ].join('\r\n');
    const port = server.service.smtp?.port as number;
    expect((await deliver(port, { from: 'someone@sender.example', to: [to], message })).data?.code).toBe(250);
    const once = { blobs: await count('blobs'), pieces: await count('blob_chunks') };
    // Its source and its text body (decision 0053).
    expect(once.blobs).toBe(before.blobs + 2);
    expect((await deliver(port, { from: 'someone@sender.example', to: [to], message })).data?.code).toBe(250);
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(once);
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.count).toBe(1);
    const raw = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(to)}/messages/${enc(list.body.messages[0].message_id)}/raw`,
    );
    // The source as received, below the trace headers the server put on top.
    const stored = Buffer.from(await (await fetch(raw.body.download_url)).arrayBuffer()).toString();
    expect(stored.startsWith('Return-Path: <someone@sender.example>\r\n')).toBe(true);
    expect(stored.endsWith(message)).toBe(true);
  });

  it('sweeps what nothing needs: unclaimed blobs past the grace, a deletion left halfway; keeps young unclaimed ones and those a copy names', async () => {
    const commits = commitsOf(db());
    const at = (ms: number) => ({ now: () => new Date(Date.now() + ms) });
    const old = await storeBlob(commits, at(-UNCLAIMED_GRACE_MS - 60_000), patterned(CHUNK_BYTES * 5 + 1, 7));
    const young = await storeBlob(commits, at(-UNCLAIMED_GRACE_MS + 60_000), patterned(CHUNK_BYTES + 1, 11));
    const halfway = await storeBlob(commits, at(-20 * 60_000), patterned(CHUNK_BYTES * 2, 13));
    await db().updateTable('blobs').set({ state: BLOB_DOOMED }).where('id', '=', halfway).execute();
    await db().deleteFrom('blob_chunks').where('blob_id', '=', halfway).where('seq', '=', 0).execute();
    // A message whose copy names its blobs.
    const org = await organization(server, [unique('keep')]);
    const [inbox] = org.inboxes as [string];
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, {
      to: inbox,
      text: 'self',
      attachments: [{ filename: 'keep.bin', content: b64(patterned(CHUNK_BYTES, 17)) }],
    });
    expect(sent.status).toBe(200);
    const named = await db()
      .selectFrom('attachments')
      .innerJoin('messages', 'messages.id', 'attachments.message_pk')
      .select('attachments.content_blob')
      .where('messages.message_id', '=', sent.body.message_id)
      .executeTakeFirstOrThrow();

    // A deletion begun moments ago is a release still under way: not the sweep's yet.
    const underway = await storeBlob(commits, at(0), patterned(CHUNK_BYTES, 19));
    await db().updateTable('blobs').set({ state: BLOB_DOOMED }).where('id', '=', underway).execute();
    expect(await server.service.runtime.sweepBlobs()).toBe(2);
    expect(
      (await db().selectFrom('blobs').select('state').where('id', '=', underway).executeTakeFirstOrThrow()).state,
    ).toBe(BLOB_DOOMED);
    const left = await db()
      .selectFrom('blobs')
      .select(['id', 'state'])
      .where('id', 'in', [old, young, halfway, Number(named.content_blob)])
      .orderBy('id')
      .execute();
    expect(left.map((b) => [Number(b.id), b.state])).toEqual([
      [young, BLOB_UNCLAIMED],
      [Number(named.content_blob), BLOB_CLAIMED],
    ]);
    expect(await db().selectFrom('blob_chunks').select('seq').where('blob_id', 'in', [old, halfway]).execute()).toEqual(
      [],
    );
    expect(await server.service.runtime.sweepBlobs()).toBe(0);
  });

  it('releases what a blob write had written when one of its later transactions fails', async () => {
    const real = commitsOf(db());
    // The database's own batcher, but the third transaction of the write fails as a lost connection would.
    let calls = 0;
    const failing: GroupCommit<InboxDatabase> = {
      run: (work) => (++calls === 3 ? Promise.reject(new Error('connection lost')) : real.run(work)),
    };
    const before = { blobs: await count('blobs'), pieces: await count('blob_chunks') };
    const highest = Number(
      (
        await db()
          .selectFrom('blobs')
          .select((eb) => eb.fn.max('id').as('m'))
          .executeTakeFirstOrThrow()
      ).m ?? 0,
    );
    await expect(storeBlob(failing, { now: () => new Date() }, patterned(CHUNK_BYTES * 10, 29))).rejects.toThrow(
      'connection lost',
    );
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);
    // The released blob's id (highest + 1) is never given out again: a reader holding it must not find other bytes.
    const next = await storeBlob(real, { now: () => new Date() }, patterned(CHUNK_BYTES, 31));
    expect(next).toBeGreaterThan(highest + 1);
    await releaseBlobs(real, [next]);
  });

  it('releases the blobs a delivery wrote ahead when a later one of its blobs fails to be written', async () => {
    const real = commitsOf(db());
    // The attachment (10 pieces) is written in the first three units, the source (2 pieces) in the fourth, which fails.
    let calls = 0;
    const failing: GroupCommit<InboxDatabase> = {
      run: (work) => (++calls === 4 ? Promise.reject(new Error('connection lost')) : real.run(work)),
    };
    const { clock, ids, events } = server.service.runtime.services;
    const delivery = createDelivery({ commits: failing, clock, ids, events, sendLimitPerDay: 1000 });
    // prepare reads only the bytes to write ahead (and runs the store hooks, none here).
    const message = {
      raw: patterned(CHUNK_BYTES * 2, 43),
      attachmentContents: [patterned(CHUNK_BYTES * 10, 47)],
    } as unknown as ComposedMessage;
    const before = { blobs: await count('blobs'), pieces: await count('blob_chunks') };
    await expect(delivery.prepare(message)).rejects.toThrow('connection lost');
    expect(calls).toBeGreaterThan(3);
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);
  });

  it('writes a blob from pieces as they come: the size once they end, bytes of fewer than CHUNK_BYTES not at all, and what was written released when the pieces fail', async () => {
    const commits = commitsOf(db());
    const clock = { now: () => new Date() };
    async function* from(pieces: readonly Buffer[], fail?: { at: number; closed: { value: boolean } }) {
      try {
        for (const [i, piece] of pieces.entries()) {
          if (i === fail?.at) throw new Error('the composer failed');
          yield piece;
        }
      } finally {
        if (fail) fail.closed.value = true;
      }
    }
    const whole = patterned(CHUNK_BYTES * 9 + 1234, 53);
    const slices = (bytes: Buffer) =>
      Array.from({ length: Math.ceil(bytes.length / CHUNK_BYTES) }, (_, i) =>
        bytes.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES),
      );
    const before = { blobs: await count('blobs'), pieces: await count('blob_chunks') };

    // Ten pieces in three transactions: the size is known only at the last, and recorded there.
    const stored = await storeBlobPieces(commits, clock, from(slices(whole)));
    expect(stored.blob).not.toBeNull();
    expect(stored.size).toBe(whole.length);
    const row = await db()
      .selectFrom('blobs')
      .select(['size', 'state'])
      .where('id', '=', stored.blob as number)
      .executeTakeFirstOrThrow();
    expect([Number(row.size), row.state]).toEqual([whole.length, BLOB_UNCLAIMED]);
    await commits.run((trx) => claimBlobs(trx, [stored.blob as number]));
    expect((await readBlob(db(), stored.blob as number))?.equals(whole)).toBe(true);
    // Exactly one piece is a blob too (storedAsBlob), in one transaction.
    const one = await storeBlobPieces(commits, clock, from([patterned(CHUNK_BYTES, 59)]));
    expect([one.blob === null, one.size]).toEqual([false, CHUNK_BYTES]);
    // Released as a delivery that stored no copy would, claimed back to unclaimed first.
    await db()
      .updateTable('blobs')
      .set({ state: BLOB_UNCLAIMED })
      .where('id', '=', stored.blob as number)
      .execute();
    await releaseBlobs(commits, [stored.blob as number, one.blob as number]);
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);

    // Fewer bytes than a piece: handed back for their column, nothing written.
    const small = patterned(CHUNK_BYTES - 1, 61);
    const back = await storeBlobPieces(commits, clock, from([small]));
    expect(back.blob).toBeNull();
    expect(back.blob === null && back.bytes.equals(small)).toBe(true);
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);

    // Pieces that fail after two transactions: their error, what was written released, the maker closed.
    const closed = { value: false };
    await expect(storeBlobPieces(commits, clock, from(slices(whole), { at: 9, closed }))).rejects.toThrow(
      'the composer failed',
    );
    expect(closed.value).toBe(true);
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);
    // A transaction that fails: the maker is closed before the release's transactions run (it would
    // hold its thread through them), and nothing is left.
    let calls = 0;
    const closedToo = { value: false };
    let closedBeforeRelease: boolean | undefined;
    const failing: GroupCommit<InboxDatabase> = {
      run: (work) => {
        if (++calls === 2) return Promise.reject(new Error('connection lost'));
        if (calls === 3) closedBeforeRelease = closedToo.value;
        return commits.run(work);
      },
    };
    await expect(storeBlobPieces(failing, clock, from(slices(whole), { at: -1, closed: closedToo }))).rejects.toThrow(
      'connection lost',
    );
    expect(closedToo.value).toBe(true);
    expect(closedBeforeRelease).toBe(true);
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);
    // A short piece before the last breaks the pieces' contract: refused, nothing left.
    await expect(
      storeBlobPieces(commits, clock, from([patterned(CHUNK_BYTES, 1), patterned(10, 2), patterned(CHUNK_BYTES, 3)])),
    ).rejects.toThrow('shorter than CHUNK_BYTES');
    await expect(storeBlobPieces(commits, clock, from([patterned(10, 2), patterned(CHUNK_BYTES, 3)]))).rejects.toThrow(
      'shorter than CHUNK_BYTES',
    );
    expect({ blobs: await count('blobs'), pieces: await count('blob_chunks') }).toEqual(before);
  });

  it('is swept on its own, every blobSweepMs, by a process with the worker role, and never by one without', async () => {
    const database = createInboxTestDatabase(dialect);
    const servers: InboxTestServer[] = [];
    try {
      const api = await startInboxServer({ database, env: { INBOX_ROLES: 'api' }, blobSweepMs: 50 });
      servers.push(api);
      const sdb = api.service.database.db;
      const old = await storeBlob(
        commitsOf(sdb),
        { now: () => new Date(Date.now() - UNCLAIMED_GRACE_MS - 60_000) },
        patterned(CHUNK_BYTES, 67),
      );
      const exists = async () =>
        (await sdb.selectFrom('blobs').select('id').where('id', '=', old).execute()).length === 1;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await exists()).toBe(true);
      servers.push(await startInboxServer({ database, env: { INBOX_ROLES: 'worker' }, blobSweepMs: 50 }));
      const until = Date.now() + 10_000;
      while ((await exists()) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await exists()).toBe(false);
      expect(await sdb.selectFrom('blob_chunks').select('seq').where('blob_id', '=', old).execute()).toEqual([]);
    } finally {
      for (const s of servers) await s.close();
      await database.drop();
    }
  });

  it('refuses to claim a blob the sweep took, and stores nothing of that unit', async () => {
    const commits = commitsOf(db());
    const stale = await storeBlob(
      commits,
      { now: () => new Date(Date.now() - UNCLAIMED_GRACE_MS - 60_000) },
      patterned(CHUNK_BYTES, 37),
    );
    const fresh = await storeBlob(commits, { now: () => new Date() }, patterned(CHUNK_BYTES, 41));
    await server.service.runtime.sweepBlobs();
    const marker = unique('claim');
    await expect(
      commits.run(async (trx) => {
        await trx
          .insertInto('organizations')
          .values({ id: marker, name: marker, created_at: new Date().toISOString() })
          .execute();
        await claimBlobs(trx, [fresh, stale]);
      }),
    ).rejects.toBeInstanceOf(BlobGoneError);
    expect(await db().selectFrom('organizations').select('id').where('id', '=', marker).execute()).toEqual([]);
    expect(
      (await db().selectFrom('blobs').select('state').where('id', '=', fresh).executeTakeFirstOrThrow()).state,
    ).toBe(BLOB_UNCLAIMED);
  });

  it('answers 404 for bytes whose pieces no longer add up to their blob, never a part of them', async () => {
    const org = await organization(server, [unique('torn')]);
    const [inbox] = org.inboxes as [string];
    const file = patterned(CHUNK_BYTES * 2 + 5, 23);
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, {
      to: inbox,
      text: 'torn',
      attachments: [{ filename: 'torn.bin', content: b64(file) }],
    });
    expect(sent.status).toBe(200);
    const row = await db()
      .selectFrom('messages')
      .innerJoin('attachments', 'attachments.message_pk', 'messages.id')
      .select(['messages.source_blob', 'attachments.content_blob', 'attachments.attachment_id'])
      .where('messages.message_id', '=', sent.body.message_id)
      .executeTakeFirstOrThrow();
    const links = async () => ({
      raw: (
        await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.body.message_id)}/raw`)
      ).body.download_url as string,
      attachment: (
        await call(
          server.url,
          org.key,
          'GET',
          `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.body.message_id)}/attachments/${enc(row.attachment_id)}`,
        )
      ).body.download_url as string,
    });
    const whole = await links();
    expect(Buffer.from(await (await fetch(whole.attachment)).arrayBuffer()).equals(file)).toBe(true);
    expect((await fetch(whole.raw)).status).toBe(200);
    for (const blob of [row.source_blob, row.content_blob])
      await db().deleteFrom('blob_chunks').where('blob_id', '=', Number(blob)).where('seq', '=', 1).execute();
    const torn = await links();
    for (const url of [torn.raw, torn.attachment]) {
      const res = await fetch(url);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('not_found');
    }
  });

  it('moves the pieces of migration 0012 into claimed blobs that the copies name, and reads them back', async () => {
    const database = createInboxTestDatabase(dialect);
    const config = loadConfig(inboxConfigSpec, {
      INBOX_DATABASE_URL: database.url,
      DATA_DIR: database.dataDir,
      INBOX_DOMAINS: 'blobs.test',
    });
    const opened = await openInboxDatabase(config);
    try {
      const upTo12 = Object.fromEntries(Object.entries(inboxMigrations).filter(([name]) => name < '0013'));
      await migrateToLatest(opened.db, upTo12, INBOX_MIGRATION_TABLE);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the schema of migration 0012, which the application types no longer describe
      const legacy = opened.db as any;
      const now = new Date().toISOString();
      await legacy.insertInto('organizations').values({ id: 'org1', name: 'o', created_at: now }).execute();
      await legacy
        .insertInto('pods')
        .values({ id: 'pod1', organization_id: 'org1', name: 'p', created_at: now })
        .execute();
      await legacy
        .insertInto('inboxes')
        .values({
          inbox_id: 'a@blobs.test',
          organization_id: 'org1',
          pod_id: 'pod1',
          username: 'a',
          domain: 'blobs.test',
          created_at: now,
          updated_at: now,
        })
        .execute();
      const source = patterned(CHUNK_BYTES + 5, 3);
      const file = patterned(CHUNK_BYTES * 2 + 9, 5);
      const { id } = await legacy
        .insertInto('messages')
        .values({
          organization_id: 'org1',
          inbox_id: 'a@blobs.test',
          thread_id: 't1',
          message_id: '<m1@blobs.test>',
          labels: '[]',
          timestamp: now,
          from_address: 'x@y.example',
          to_addresses: '[]',
          size: source.length,
          raw: null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await legacy
        .insertInto('attachments')
        .values({ message_pk: id, attachment_id: 'att1', size: file.length, content: Buffer.alloc(0) })
        .execute();
      const pieces = (part: string, bytes: Buffer) =>
        Array.from({ length: Math.ceil(bytes.length / CHUNK_BYTES) }, (_, seq) => ({
          message_pk: id,
          part,
          seq,
          bytes: bytes.subarray(seq * CHUNK_BYTES, (seq + 1) * CHUNK_BYTES),
        }));
      await legacy
        .insertInto('message_chunks')
        .values([...pieces('source', source), ...pieces('att1', file)])
        .execute();

      await migrateInbox(opened);
      const message = await opened.db
        .selectFrom('messages')
        .select(['raw', 'source_blob'])
        .where('id', '=', Number(id))
        .executeTakeFirstOrThrow();
      const attachment = await opened.db
        .selectFrom('attachments')
        .select(['content_blob'])
        .where('message_pk', '=', Number(id))
        .executeTakeFirstOrThrow();
      expect(message.raw).toBeNull();
      const blobs = await opened.db.selectFrom('blobs').select(['id', 'state']).orderBy('id').execute();
      expect(blobs.map((b) => [Number(b.id), b.state])).toEqual(
        [
          [Number(message.source_blob), BLOB_CLAIMED],
          [Number(attachment.content_blob), BLOB_CLAIMED],
        ].sort((x, y) => (x[0] as number) - (y[0] as number)),
      );
      const bytesOf = async (blob: number | string | null) =>
        Buffer.concat(
          (
            await opened.db
              .selectFrom('blob_chunks')
              .select('bytes')
              .where('blob_id', '=', Number(blob))
              .orderBy('seq')
              .execute()
          ).map((r) => Buffer.from(r.bytes)),
        );
      expect((await bytesOf(message.source_blob)).equals(source)).toBe(true);
      expect((await bytesOf(attachment.content_blob)).equals(file)).toBe(true);
    } finally {
      await opened.destroy();
      await database.drop();
    }
  });
});
