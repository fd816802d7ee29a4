import { AgentMail, type AgentMailError } from 'agentmail';
import * as wire from 'agentmail/serialization';
import * as wire049 from 'agentmail-049/serialization';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, eventsOf, expectError, organization, secretOf, unique } from './fixtures.js';

/** A schema of the SDK's serialization layer (`parse` validates; the client itself skips it). */
interface WireSchema {
  parse(raw: unknown, options: { unrecognizedObjectKeys: 'fail' | 'passthrough' }): { ok: boolean; errors?: unknown };
}

/**
 * The wire body against the SDK's own schema, strictly: every required field present with its
 * type, enums in range, dates parseable, and no key the type does not know.
 */
function expectWire(schema: WireSchema, body: unknown): void {
  const result = schema.parse(body, { unrecognizedObjectKeys: 'fail' });
  expect(result.errors ?? []).toEqual([]);
  expect(result.ok).toBe(true);
}

const hello = b64('hello draft');

describe.each(dialects)('%s: drafts', (dialect) => {
  let server: InboxTestServer;
  let url: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    url = server.url;
  });
  afterAll(async () => {
    await server?.close();
  });

  /** An organization with inboxes alice and bob; alice's pod id. */
  async function tenant() {
    const org = await organization(server, [{ username: unique('alice'), displayName: 'Alice' }, unique('bob')]);
    const [alice, bob] = org.inboxes as [string, string];
    const podId = (await org.client.inboxes.get(alice)).podId;
    return { ...org, alice, bob, podId };
  }

  describe('with SDK 0.5.27', () => {
    it('creates, reads, lists, updates and deletes a draft at inbox, organization and pod scope, every body as the SDK types say', async () => {
      const t = await tenant();
      const created = await call(url, t.key, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts`, {
        to: [`Bob <${t.bob}>`],
        cc: ['carol@inbox.test'],
        bcc: ['dave@inbox.test'],
        reply_to: [t.alice],
        subject: 'Quarterly plan',
        text: 'Draft body',
        html: '<p>Draft body</p>',
        labels: ['review'],
        attachments: [{ filename: 'plan.txt', content_type: 'text/plain', content: hello }],
        client_id: 'draft-1',
      });
      expect(created.status).toBe(201);
      expectWire(wire.Draft, created.body);
      const d = created.body;
      expect(d).toMatchObject({
        inbox_id: t.alice,
        to: [`Bob <${t.bob}>`],
        cc: ['carol@inbox.test'],
        bcc: ['dave@inbox.test'],
        reply_to: [t.alice],
        subject: 'Quarterly plan',
        preview: 'Draft body',
        text: 'Draft body',
        html: '<p>Draft body</p>',
        labels: ['review'],
        client_id: 'draft-1',
        attachments: [
          { filename: 'plan.txt', content_type: 'text/plain', size: 11, content_disposition: 'attachment' },
        ],
      });
      expect(d.send_status).toBeUndefined();
      expect(d.created_at).toBe(d.updated_at);

      // The same client_id in the inbox: the draft created first, 200.
      const again = await call(url, t.key, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts`, {
        to: [t.bob],
        client_id: 'draft-1',
      });
      expect(again.status).toBe(200);
      expect(again.body.draft_id).toBe(d.draft_id);

      // The SDK reads it with Date fields at every scope.
      const viaInbox = await t.client.inboxes.drafts.get(t.alice, d.draft_id);
      expect(viaInbox.createdAt).toBeInstanceOf(Date);
      expect(viaInbox.subject).toBe('Quarterly plan');
      expect((await t.client.drafts.get(d.draft_id)).draftId).toBe(d.draft_id);
      expect((await t.client.pods.drafts.get(t.podId, d.draft_id)).draftId).toBe(d.draft_id);
      for (const path of [
        `/v0/inboxes/${enc(t.alice)}/drafts/${d.draft_id}`,
        `/v0/drafts/${d.draft_id}`,
        `/v0/pods/${t.podId}/drafts/${d.draft_id}`,
      ]) {
        const got = await call(url, t.key, 'GET', path);
        expect(got.status).toBe(200);
        expectWire(wire.Draft, got.body);
        expect(got.body).toEqual(d);
      }

      // Lists: DraftItems (no bodies), at inbox, organization and pod scope.
      for (const list of [
        await t.client.inboxes.drafts.list(t.alice),
        await t.client.drafts.list(),
        await t.client.pods.drafts.list(t.podId),
      ]) {
        expect(list.count).toBe(1);
        expect(list.drafts.map((x) => x.draftId)).toEqual([d.draft_id]);
        expect(list.drafts[0]?.updatedAt).toBeInstanceOf(Date);
      }
      for (const path of [`/v0/inboxes/${enc(t.alice)}/drafts`, '/v0/drafts', `/v0/pods/${t.podId}/drafts`]) {
        const listed = await call(url, t.key, 'GET', path);
        expectWire(wire.ListDraftsResponse, listed.body);
        expect(listed.body.drafts[0].text).toBeUndefined();
      }

      // The attachment at every scope: metadata and a download link, served like a message's.
      const attachmentId = d.attachments[0].attachment_id as string;
      const links = [
        await t.client.inboxes.drafts.getAttachment(t.alice, d.draft_id, attachmentId),
        await t.client.drafts.getAttachment(d.draft_id, attachmentId),
        await t.client.pods.drafts.getAttachment(t.podId, d.draft_id, attachmentId),
      ];
      for (const link of links) {
        expect(link).toMatchObject({ attachmentId, filename: 'plan.txt', size: 11 });
        expect(link.expiresAt).toBeInstanceOf(Date);
        const bytes = await fetch(link.downloadUrl);
        expect(bytes.status).toBe(200);
        expect(await bytes.text()).toBe('hello draft');
      }
      const rawLink = await call(url, t.key, 'GET', `/v0/drafts/${d.draft_id}/attachments/${attachmentId}`);
      expectWire(wire.AttachmentResponse, rawLink.body);

      // Update: omitted fields stay, null and [] clear, attachments and labels are added and removed.
      const updated = await t.client.inboxes.drafts.update(t.alice, d.draft_id, {
        subject: 'Quarterly plan v2',
        cc: [],
        bcc: null,
        html: null,
        addAttachments: [{ filename: 'notes.txt', content: b64('notes') }],
        removeAttachments: [attachmentId],
        addLabels: ['urgent'],
        removeLabels: ['review'],
      });
      expect(updated).toMatchObject({
        subject: 'Quarterly plan v2',
        to: [`Bob <${t.bob}>`],
        text: 'Draft body',
        labels: ['urgent'],
      });
      expect(updated.cc).toBeUndefined();
      expect(updated.bcc).toBeUndefined();
      expect(updated.html).toBeUndefined();
      expect(updated.attachments?.map((a) => a.filename)).toEqual(['notes.txt']);
      expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(updated.createdAt.getTime());
      const reread = await call(url, t.key, 'GET', `/v0/drafts/${d.draft_id}`);
      expectWire(wire.Draft, reread.body);
      // The removed attachment's link no longer resolves to bytes.
      expect((await fetch(links[0]?.downloadUrl as string)).status).toBe(404);

      await t.client.inboxes.drafts.delete(t.alice, d.draft_id);
      const gone = await call(url, t.key, 'GET', `/v0/drafts/${d.draft_id}`);
      expectError(gone, 404, 'not_found', 'DRAFT_NOT_FOUND', 'draft_id');
      expect((await t.client.drafts.list()).count).toBe(0);
    });

    it('sends a draft through the send path: SendMessageResponse, the same events as a send, the draft removed, send labels applied', async () => {
      const t = await tenant();
      const draft = await t.client.inboxes.drafts.create(t.alice, {
        to: [t.bob],
        subject: 'From a draft',
        text: 'Approved',
        labels: ['campaign'],
        attachments: [{ filename: 'a.txt', content: hello }],
      });
      const res = await call(url, t.key, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts/${draft.draftId}/send`, {
        add_labels: ['approved'],
        remove_labels: ['campaign'],
      });
      expect(res.status).toBe(200);
      expectWire(wire.SendMessageResponse, res.body);
      const sentCopy = await t.client.inboxes.messages.get(t.alice, res.body.message_id);
      expect(sentCopy.labels.sort()).toEqual(['approved', 'sent']);
      expect(sentCopy.threadId).toBe(res.body.thread_id);
      expect(sentCopy.attachments?.map((a) => a.filename)).toEqual(['a.txt']);
      const received = await t.client.inboxes.messages.list(t.bob);
      expect(received.messages.map((m) => m.subject)).toEqual(['From a draft']);
      await expect(t.client.inboxes.drafts.get(t.alice, draft.draftId)).rejects.toBeInstanceOf(AgentMail.NotFoundError);

      // A plain send of the same message emits the same kinds of events.
      const plain = await t.client.inboxes.messages.send(t.alice, { to: [t.bob], subject: 'Plain', text: 'Approved' });
      const events = await eventsOf(server, { inboxId: t.alice });
      const typesOf = (messageId: string) =>
        events
          .filter((e) => JSON.stringify(e).includes(messageId))
          .map((e) => e.event_type)
          .sort();
      expect(typesOf(res.body.message_id)).toEqual(typesOf(plain.messageId));
      expect(typesOf(res.body.message_id)).toEqual(['message.delivered', 'message.sent']);
      const bobEvents = (await eventsOf(server, { inboxId: t.bob, type: 'message.received' })).filter(
        (e) => e.message.message_id === res.body.message_id,
      );
      expect(bobEvents).toHaveLength(1);

      // Sending again: the draft is gone.
      const twice = await call(url, t.key, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts/${draft.draftId}/send`, {});
      expectError(twice, 404, 'not_found', 'DRAFT_NOT_FOUND');
    });

    it('an edit that commits while a send composes wins: the send answers 409 DRAFT_CHANGED and sends nothing, never the old content', async () => {
      const t = await tenant();
      // A large attachment makes the send read and compose for a while, outside its unit of work.
      const big = Buffer.alloc(3 * 1024 * 1024, 'x').toString('base64');
      const outcomes: string[] = [];
      for (let i = 0; i < 6; i++) {
        const draft = await t.client.inboxes.drafts.create(t.alice, {
          to: [t.bob],
          subject: `old ${i}`,
          text: 'x',
          attachments: [{ filename: 'big.bin', content: big }],
        });
        const path = `/v0/inboxes/${enc(t.alice)}/drafts/${draft.draftId}`;
        const sending = call(url, t.key, 'POST', `${path}/send`, {});
        await new Promise((r) => setTimeout(r, 5));
        const [sent, edited] = await Promise.all([sending, call(url, t.key, 'PATCH', path, { subject: `new ${i}` })]);
        if (edited.status === 200 && sent.status === 200) {
          // The edit landed first: the message carries it.
          expect((await t.client.inboxes.messages.get(t.alice, sent.body.message_id)).subject).toBe(`new ${i}`);
          outcomes.push('edit, then send');
        } else if (edited.status === 200) {
          expectError(sent, 409, 'conflict', 'DRAFT_CHANGED');
          expect((await t.client.inboxes.drafts.get(t.alice, draft.draftId)).subject).toBe(`new ${i}`);
          outcomes.push('send refused');
        } else {
          expectError(edited, 404, 'not_found', 'DRAFT_NOT_FOUND');
          expect(sent.status).toBe(200);
          outcomes.push('send, then edit refused');
        }
      }
      const subjects = (await t.client.inboxes.messages.list(t.bob)).messages.map((m) => m.subject ?? '');
      expect(subjects.filter((s) => s.startsWith('old'))).toEqual([]);
      // The interleaving this test exists for happened at least once.
      expect(outcomes).toContain('send refused');
    });

    it('makes reply, reply-all and forward drafts from a message, and sends them into its thread', async () => {
      const t = await tenant();
      const carol = (await t.client.inboxes.create({ username: unique('carol') })).inboxId;
      const first = await t.client.inboxes.messages.send(t.bob, {
        to: [t.alice],
        cc: [carol],
        subject: 'Lunch?',
        text: 'Noon?',
        attachments: [{ filename: 'menu.txt', content: b64('soup') }],
      });
      const inAlice = (await t.client.inboxes.messages.list(t.alice)).messages[0] as AgentMail.MessageItem;

      const reply = await t.client.inboxes.drafts.create(t.alice, { inReplyTo: inAlice.messageId, text: 'Yes!' });
      expect(reply).toMatchObject({
        to: [t.bob],
        subject: 'Re: Lunch?',
        inReplyTo: first.messageId,
        references: [first.messageId],
      });
      const all = await t.client.inboxes.drafts.create(t.alice, {
        inReplyTo: inAlice.messageId,
        replyAll: true,
        text: 'Yes, all',
      });
      expect(all.to).toEqual([t.bob]);
      expect(all.cc).toEqual([carol]);
      const forward = await t.client.inboxes.drafts.create(t.alice, {
        forwardOf: inAlice.messageId,
        to: [carol],
        text: 'FYI',
      });
      expect(forward).toMatchObject({ subject: 'Fwd: Lunch?', forwardOf: first.messageId, to: [carol] });
      expect(forward.inReplyTo).toBeUndefined();
      for (const x of [reply, all, forward])
        expectWire(wire.Draft, (await call(url, t.key, 'GET', `/v0/drafts/${x.draftId}`)).body);

      const sentReply = await t.client.inboxes.drafts.send(t.alice, reply.draftId, {});
      expect(sentReply.threadId).toBe(inAlice.threadId);
      const bobThread = await t.client.inboxes.threads.get(t.bob, first.threadId);
      expect(bobThread.messages.map((m) => m.subject)).toEqual(['Lunch?', 'Re: Lunch?']);

      const sentForward = await t.client.inboxes.drafts.send(t.alice, forward.draftId, {});
      const fwd = await t.client.inboxes.messages.get(t.alice, sentForward.messageId);
      expect(fwd.text).toContain('FYI');
      expect(fwd.text).toContain('Noon?');
      expect(fwd.attachments?.map((a) => a.filename)).toEqual(['menu.txt']);
    });

    it('schedules with send_at (labelled scheduled), reschedules, unschedules and cancels', async () => {
      const t = await tenant();
      const at = new Date(Date.now() + 3_600_000);
      const draft = await t.client.inboxes.drafts.create(t.alice, { to: [t.bob], text: 'Later', sendAt: at });
      expect(draft).toMatchObject({ sendStatus: 'scheduled', labels: ['scheduled'] });
      expect(draft.sendAt?.toISOString()).toBe(at.toISOString());
      const scheduled = await t.client.inboxes.drafts.list(t.alice, { labels: ['scheduled'] });
      expect(scheduled.drafts.map((x) => x.draftId)).toEqual([draft.draftId]);
      expectWire(wire.Draft, (await call(url, t.key, 'GET', `/v0/drafts/${draft.draftId}`)).body);

      const later = new Date(at.getTime() + 60_000);
      const moved = await t.client.inboxes.drafts.update(t.alice, draft.draftId, { sendAt: later });
      expect(moved.sendAt?.toISOString()).toBe(later.toISOString());
      const unscheduled = await t.client.inboxes.drafts.update(t.alice, draft.draftId, { sendAt: null });
      expect(unscheduled.sendStatus).toBeUndefined();
      expect(unscheduled.sendAt).toBeUndefined();
      expect(unscheduled.labels).toEqual([]);
      expect((await t.client.inboxes.drafts.list(t.alice, { labels: ['scheduled'] })).count).toBe(0);
      // Every job of those schedules was withdrawn.
      const jobs = await server.service.runtime.services.db
        .selectFrom('jobs')
        .select(['status', 'last_error'])
        .where('queue', '=', 'drafts.send')
        .where('payload', 'like', `%${draft.draftId}%`)
        .execute();
      expect(jobs).toEqual([
        { status: 'done', last_error: 'cancelled' },
        { status: 'done', last_error: 'cancelled' },
      ]);
    });

    it('answers every error in the spec format with the SDK error classes', async () => {
      const t = await tenant();
      const base = `/v0/inboxes/${enc(t.alice)}/drafts`;
      const post = (body: unknown) => call(url, t.key, 'POST', base, body);
      expectError(await post({ to: ['not an address'] }), 400, 'validation_error', 'INVALID_EMAIL', 'to');
      expectError(await post({ labels: ['sent'] }), 400, 'validation_error', 'RESERVED_LABEL', 'labels');
      expectError(await post({ labels: ['scheduled'] }), 400, 'validation_error', 'RESERVED_LABEL', 'labels');
      expectError(await post({ send_at: 'tomorrow-ish' }), 400, 'validation_error', 'INVALID_SEND_AT', 'send_at');
      expectError(
        await post({ attachments: [{ url: 'ftp://example.com/x.pdf' }] }),
        400,
        'validation_error',
        'ATTACHMENT_URL_INVALID',
        'attachments',
      );
      expectError(
        await post({ attachments: [{ content: '%%%' }] }),
        400,
        'validation_error',
        'INVALID_ATTACHMENT',
        'attachments',
      );
      expectError(await post({ subject: 'a\r\nBcc: x@y.z' }), 400, 'validation_error', 'INVALID_SUBJECT', 'subject');
      // A draft may name any address (it may go out once a relay is set up, or the domain turns
      // out to be one of our verified custom domains); sending it without a relay is refused, and it stays.
      const external = await post({ to: ['someone@elsewhere.example'], text: 'x' });
      expect(external.status).toBe(201);
      expectError(
        await call(url, t.key, 'POST', `${base}/${external.body.draft_id}/send`, {}),
        400,
        'validation_error',
        'EXTERNAL_DELIVERY_DISABLED',
        'to',
      );
      expect((await call(url, t.key, 'GET', `${base}/${external.body.draft_id}`)).status).toBe(200);
      expectError(
        await post({ in_reply_to: '<a@b>', forward_of: '<a@b>' }),
        400,
        'validation_error',
        'INVALID_DRAFT_KIND',
        'forward_of',
      );
      expectError(await post({ reply_all: true }), 400, 'validation_error', 'INVALID_DRAFT_KIND', 'reply_all');
      expectError(await post({ in_reply_to: '<nope@inbox.test>' }), 404, 'not_found', 'MESSAGE_NOT_FOUND');
      expectError(await post({ headers: { 'X-A': '1' } }), 400, 'validation_error', 'UNSUPPORTED_FIELD', 'headers');
      expectError(await post({ text: 'a\u0000b' }), 400, 'validation_error', 'NUL_CHARACTER', 'text');
      expectError(await post('{"to":'), 400, 'validation_error', 'INVALID_JSON');
      expectError(await post({ to: 5 }), 400, 'validation_error', 'INVALID_VALUE', 'to');
      expectError(
        await call(url, t.key, 'POST', `/v0/inboxes/nobody%40inbox.test/drafts`, {}),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
        'inbox_id',
      );
      expectError(await call(url, undefined, 'GET', '/v0/drafts'), 401, 'authentication_error', 'MISSING_API_KEY');

      const empty = await t.client.inboxes.drafts.create(t.alice, {});
      expect(empty.labels).toEqual([]);
      const one = `${base}/${empty.draftId}`;
      // A draft may lack a recipient; its send may not (and the draft stays).
      expectError(
        await call(url, t.key, 'POST', `${one}/send`, {}),
        400,
        'validation_error',
        'MISSING_RECIPIENT',
        'to',
      );
      await t.client.inboxes.drafts.update(t.alice, empty.draftId, { to: [t.bob] });
      expectError(
        await call(url, t.key, 'POST', `${one}/send`, {}),
        400,
        'validation_error',
        'MISSING_CONTENT',
        'text',
      );
      expectError(
        await call(url, t.key, 'POST', `${one}/send`, { add_labels: ['x'], remove_labels: ['x'] }),
        400,
        'validation_error',
        'CONFLICTING_LABELS',
      );
      expectError(
        await call(url, t.key, 'PATCH', one, { in_reply_to: '<a@b>' }),
        400,
        'validation_error',
        'UNSUPPORTED_FIELD',
        'in_reply_to',
      );
      expectError(
        await call(url, t.key, 'PATCH', one, { labels: ['x'] }),
        400,
        'validation_error',
        'UNSUPPORTED_FIELD',
        'labels',
      );
      expectError(
        await call(url, t.key, 'PATCH', one, { remove_attachments: ['missing'] }),
        404,
        'not_found',
        'ATTACHMENT_NOT_FOUND',
      );
      expectError(
        await call(url, t.key, 'PATCH', one, { add_labels: ['scheduled'] }),
        400,
        'validation_error',
        'RESERVED_LABEL',
        'add_labels',
      );
      expectError(
        await call(url, t.key, 'PATCH', one, { send_at: 'soon' }),
        400,
        'validation_error',
        'INVALID_SEND_AT',
        'send_at',
      );
      expectError(
        await call(url, t.key, 'PATCH', one, { to: ['bad'] }),
        400,
        'validation_error',
        'INVALID_EMAIL',
        'to',
      );
      expectError(
        await call(url, t.key, 'PATCH', `${base}/missing`, {}),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
        'draft_id',
      );
      expectError(await call(url, t.key, 'DELETE', `${base}/missing`), 404, 'not_found', 'DRAFT_NOT_FOUND', 'draft_id');
      expectError(await call(url, t.key, 'GET', `${one}/attachments/none`), 404, 'not_found', 'ATTACHMENT_NOT_FOUND');
      expectError(
        await call(url, t.key, 'GET', `${base}?page_token=forged`),
        400,
        'validation_error',
        'INVALID_PAGE_TOKEN',
        'page_token',
      );
      expectError(await call(url, t.key, 'GET', `${base}?limit=0`), 400, 'validation_error', 'INVALID_VALUE', 'limit');
      expectError(
        await call(url, t.key, 'GET', `${base}?labels=%5B1%5D`),
        400,
        'validation_error',
        'INVALID_LABELS',
        'labels',
      );
      expectError(
        await call(url, t.key, 'GET', '/v0/pods/no-such-pod/drafts'),
        404,
        'not_found',
        'POD_NOT_FOUND',
        'pod_id',
      );
      // The untouched draft survived every refused change.
      expect((await t.client.inboxes.drafts.get(t.alice, empty.draftId)).to).toEqual([t.bob]);

      const sdkErrors: [() => Promise<unknown>, unknown][] = [
        [() => t.client.inboxes.drafts.create(t.alice, { to: ['bad'] }), AgentMail.ValidationError],
        [() => t.client.inboxes.drafts.get(t.alice, 'missing'), AgentMail.NotFoundError],
        [() => t.client.drafts.get('missing'), AgentMail.NotFoundError],
        [() => t.client.pods.drafts.list('no-such-pod'), AgentMail.NotFoundError],
        [() => t.client.inboxes.drafts.send(t.alice, 'missing', {}), AgentMail.NotFoundError],
      ];
      for (const [request, kind] of sdkErrors) {
        const err = (await request().catch((e: unknown) => e)) as AgentMailError;
        expect(err).toBeInstanceOf(kind);
        expect((err.body as { error: { type: string } }).error.type).toMatch(/validation_error|not_found/);
      }
    });

    it('pages by keyset and filters by labels and time', async () => {
      const t = await tenant();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(
          (await t.client.inboxes.drafts.create(t.alice, { subject: `d${i}`, labels: i % 2 ? ['odd'] : [] })).draftId,
        );
      const first = await t.client.inboxes.drafts.list(t.alice, { limit: 2 });
      expect(first.drafts.map((d) => d.draftId)).toEqual([ids[4], ids[3]]);
      const second = await t.client.inboxes.drafts.list(t.alice, { limit: 2, pageToken: first.nextPageToken });
      const third = await t.client.inboxes.drafts.list(t.alice, { limit: 2, pageToken: second.nextPageToken });
      expect([...second.drafts, ...third.drafts].map((d) => d.draftId)).toEqual([ids[2], ids[1], ids[0]]);
      expect(third.nextPageToken).toBeUndefined();
      expect((await t.client.inboxes.drafts.list(t.alice, { ascending: true })).drafts.map((d) => d.draftId)).toEqual(
        ids,
      );
      expect((await t.client.drafts.list({ labels: ['odd'] })).drafts.map((d) => d.draftId)).toEqual([ids[3], ids[1]]);
      expect((await t.client.drafts.list({ after: new Date(Date.now() + 60_000) })).count).toBe(0);
      expect((await t.client.drafts.list({ before: new Date(Date.now() + 60_000) })).count).toBe(5);
    });
  });

  describe('with SDK 0.4.9', () => {
    it('creates, reads, lists, updates, sends and deletes drafts with the older client', async () => {
      const t = await tenant();
      const old = server.client049(t.key);
      const draft = await old.inboxes.drafts.create(t.alice, {
        to: [t.bob],
        subject: 'Old SDK',
        text: 'Hi',
        attachments: [{ filename: 'o.txt', content: hello }],
      });
      expect(draft.createdAt).toBeInstanceOf(Date);
      const raw = await call(url, t.key, 'GET', `/v0/inboxes/${enc(t.alice)}/drafts/${draft.draftId}`);
      expectWire(wire049.Draft, raw.body);
      expectWire(wire049.ListDraftsResponse, (await call(url, t.key, 'GET', '/v0/drafts')).body);
      expect((await old.inboxes.drafts.get(t.alice, draft.draftId)).subject).toBe('Old SDK');
      expect((await old.drafts.get(draft.draftId)).draftId).toBe(draft.draftId);
      expect((await old.drafts.list()).drafts.map((d) => d.draftId)).toEqual([draft.draftId]);
      expect((await old.inboxes.drafts.list(t.alice)).count).toBe(1);
      expect((await old.pods.drafts.list(t.podId)).count).toBe(1);
      expect((await old.pods.drafts.get(t.podId, draft.draftId)).draftId).toBe(draft.draftId);
      const attachmentId = draft.attachments?.[0]?.attachmentId as string;
      expect((await old.inboxes.drafts.getAttachment(t.alice, draft.draftId, attachmentId)).size).toBe(11);
      expect((await old.drafts.getAttachment(draft.draftId, attachmentId)).filename).toBe('o.txt');
      expect((await old.pods.drafts.getAttachment(t.podId, draft.draftId, attachmentId)).filename).toBe('o.txt');
      const updated = await old.inboxes.drafts.update(t.alice, draft.draftId, { subject: 'Old SDK v2' });
      expect(updated.subject).toBe('Old SDK v2');
      const sent = await old.inboxes.drafts.send(t.alice, draft.draftId, {});
      expect(sent.messageId).toMatch(/^<.+@inbox\.test>$/);
      const other = await old.inboxes.drafts.create(t.alice, { to: [t.bob] });
      await old.inboxes.drafts.delete(t.alice, other.draftId);
      expect((await old.drafts.list()).count).toBe(0);
    });
  });

  describe('isolation', () => {
    it('never shows one organization the drafts, inboxes or pods of another (404 everywhere)', async () => {
      const a = await tenant();
      const b = await tenant();
      const draft = await a.client.inboxes.drafts.create(a.alice, {
        to: [a.bob],
        attachments: [{ filename: 'x.txt', content: hello }],
      });
      const attachmentId = draft.attachments?.[0]?.attachmentId as string;
      const asB = (method: string, path: string, body?: unknown) => call(url, b.key, method, path, body);
      expectError(await asB('GET', `/v0/drafts/${draft.draftId}`), 404, 'not_found', 'DRAFT_NOT_FOUND');
      expectError(
        await asB('GET', `/v0/drafts/${draft.draftId}/attachments/${attachmentId}`),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
      );
      expectError(
        await asB('GET', `/v0/inboxes/${enc(b.alice)}/drafts/${draft.draftId}`),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
      );
      expectError(
        await asB('PATCH', `/v0/inboxes/${enc(b.alice)}/drafts/${draft.draftId}`, { subject: 'mine' }),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
      );
      expectError(
        await asB('POST', `/v0/inboxes/${enc(b.alice)}/drafts/${draft.draftId}/send`, {}),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
      );
      expectError(
        await asB('DELETE', `/v0/inboxes/${enc(b.alice)}/drafts/${draft.draftId}`),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
      );
      for (const [method, suffix] of [
        ['GET', ''],
        ['POST', ''],
        ['GET', `/${draft.draftId}`],
        ['PATCH', `/${draft.draftId}`],
        ['DELETE', `/${draft.draftId}`],
        ['POST', `/${draft.draftId}/send`],
        ['GET', `/${draft.draftId}/attachments/${attachmentId}`],
      ] as const) {
        expectError(
          await asB(
            method,
            `/v0/inboxes/${enc(a.alice)}/drafts${suffix}`,
            method === 'GET' || method === 'DELETE' ? undefined : {},
          ),
          404,
          'not_found',
          'INBOX_NOT_FOUND',
        );
      }
      for (const suffix of ['', `/${draft.draftId}`, `/${draft.draftId}/attachments/${attachmentId}`]) {
        expectError(await asB('GET', `/v0/pods/${a.podId}/drafts${suffix}`), 404, 'not_found', 'POD_NOT_FOUND');
      }
      expect((await b.client.drafts.list()).count).toBe(0);
      // A's draft is untouched.
      expect((await a.client.drafts.get(draft.draftId)).subject).toBeUndefined();
      expect((await a.client.drafts.list()).count).toBe(1);
    });

    it("shows a pod key its pod's drafts and an inbox key its inbox's, 404 outside; each route needs its permission (403)", async () => {
      const t = await tenant();
      const pod2 = await t.client.pods.create({ name: 'second' });
      const carol = (await t.client.pods.inboxes.create(pod2.podId, { username: unique('carol') })).inboxId;
      const inAlice = await t.client.inboxes.drafts.create(t.alice, { subject: 'alice' });
      const inBob = await t.client.inboxes.drafts.create(t.bob, { subject: 'bob' });
      const inCarol = await t.client.inboxes.drafts.create(carol, {
        subject: 'carol',
        attachments: [{ filename: 'c.txt', content: hello }],
      });

      const podKey = secretOf(await t.client.pods.apiKeys.create(pod2.podId, { name: 'pod2' }));
      const asPod = server.client(podKey);
      expect((await asPod.drafts.list()).drafts.map((d) => d.draftId)).toEqual([inCarol.draftId]);
      expect((await asPod.pods.drafts.list(pod2.podId)).drafts.map((d) => d.draftId)).toEqual([inCarol.draftId]);
      expect((await asPod.drafts.get(inCarol.draftId)).subject).toBe('carol');
      expect(
        (
          await asPod.pods.drafts.getAttachment(
            pod2.podId,
            inCarol.draftId,
            inCarol.attachments?.[0]?.attachmentId as string,
          )
        ).filename,
      ).toBe('c.txt');
      expectError(await call(url, podKey, 'GET', `/v0/drafts/${inAlice.draftId}`), 404, 'not_found', 'DRAFT_NOT_FOUND');
      expectError(await call(url, podKey, 'GET', `/v0/pods/${t.podId}/drafts`), 404, 'not_found', 'POD_NOT_FOUND');
      expectError(
        await call(url, podKey, 'GET', `/v0/pods/${pod2.podId}/drafts/${inAlice.draftId}`),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
      );
      expectError(
        await call(url, podKey, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts`, {}),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(url, podKey, 'PATCH', `/v0/inboxes/${enc(t.alice)}/drafts/${inAlice.draftId}`, { subject: 'x' }),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(url, podKey, 'DELETE', `/v0/inboxes/${enc(carol)}/drafts/${inAlice.draftId}`),
        404,
        'not_found',
        'DRAFT_NOT_FOUND',
      );

      const inboxKey = secretOf(await t.client.inboxes.apiKeys.create(t.alice, { name: 'alice' }));
      const asAlice = server.client(inboxKey);
      expect((await asAlice.drafts.list()).drafts.map((d) => d.draftId)).toEqual([inAlice.draftId]);
      expect((await asAlice.inboxes.drafts.list(t.alice)).count).toBe(1);
      expectError(await call(url, inboxKey, 'GET', `/v0/drafts/${inBob.draftId}`), 404, 'not_found', 'DRAFT_NOT_FOUND');
      expectError(
        await call(url, inboxKey, 'GET', `/v0/inboxes/${enc(t.bob)}/drafts`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(url, inboxKey, 'POST', `/v0/inboxes/${enc(t.bob)}/drafts/${inBob.draftId}/send`, {}),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(await call(url, inboxKey, 'GET', `/v0/pods/${t.podId}/drafts`), 404, 'not_found', 'POD_NOT_FOUND');
      expect((await asAlice.inboxes.drafts.update(t.alice, inAlice.draftId, { subject: 'mine' })).subject).toBe('mine');

      const reader = secretOf(await t.client.apiKeys.create({ name: 'reader', permissions: { draftRead: true } }));
      expect((await server.client(reader).drafts.list()).count).toBe(3);
      const one = `/v0/inboxes/${enc(t.alice)}/drafts/${inAlice.draftId}`;
      for (const [method, path, body, permission] of [
        ['POST', `/v0/inboxes/${enc(t.alice)}/drafts`, {}, 'draftCreate'],
        ['PATCH', one, { subject: 'x' }, 'draftUpdate'],
        ['DELETE', one, undefined, 'draftDelete'],
        ['POST', `${one}/send`, {}, 'draftSend'],
      ] as const) {
        const denied = await call(url, reader, method, path, body);
        expectError(denied, 403, 'permission_error', 'PERMISSION_DENIED');
        expect(denied.body.error.details.permission).toBe(permission);
      }
      const writer = secretOf(await t.client.apiKeys.create({ name: 'writer', permissions: { draftCreate: true } }));
      expect((await call(url, writer, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts`, {})).status).toBe(201);
      for (const path of [
        '/v0/drafts',
        one,
        `/v0/pods/${t.podId}/drafts`,
        `/v0/drafts/${inCarol.draftId}/attachments/x`,
      ]) {
        expectError(await call(url, writer, 'GET', path), 403, 'permission_error', 'PERMISSION_DENIED');
      }
      // A reply draft reads the message it answers: that takes messageRead too.
      const sent = await t.client.inboxes.messages.send(t.bob, { to: [t.alice], text: 'hi' });
      expectError(
        await call(url, writer, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts`, { in_reply_to: sent.messageId }),
        403,
        'permission_error',
        'PERMISSION_DENIED',
      );
      expect((await t.client.drafts.get(inAlice.draftId)).subject).toBe('mine');
    });
  });
});

/**
 * Scheduled sends run as jobs of the durable queue: servers here run without the background
 * worker (role api) on a fixed clock, and jobs run when the test drains the queue, or when a
 * server with the worker role starts on the same database.
 */
describe.each(dialects)('%s: scheduled drafts', (dialect) => {
  const start = new Date();

  async function scheduledSetup(server: InboxTestServer) {
    const org = await organization(server, [unique('alice'), unique('bob')]);
    const [alice, bob] = org.inboxes as [string, string];
    return { ...org, alice, bob };
  }

  const subjectsIn = async (server: InboxTestServer, key: string, inbox: string) =>
    (await server.client(key).inboxes.messages.list(inbox)).messages.map((m) => m.subject);

  it('sends at send_at, once, after a reschedule; a deleted or unscheduled draft is never sent', async () => {
    const clock = fixedClock(start);
    const server = await startInboxServer({ dialect, clock, env: { INBOX_ROLES: 'api' } });
    try {
      const t = await scheduledSetup(server);
      const runner = server.service.runtime.runner;
      const at = (s: number) => new Date(clock.now().getTime() + s * 1000);
      const moved = await t.client.inboxes.drafts.create(t.alice, {
        to: [t.bob],
        subject: 'moved',
        text: 'x',
        sendAt: at(60),
      });
      const cancelled = await t.client.inboxes.drafts.create(t.alice, {
        to: [t.bob],
        subject: 'cancelled',
        text: 'x',
        sendAt: at(60),
      });
      const unscheduled = await t.client.inboxes.drafts.create(t.alice, {
        to: [t.bob],
        subject: 'unscheduled',
        text: 'x',
        sendAt: at(60),
      });
      expect(await runner.drain()).toBe(0);
      await t.client.inboxes.drafts.update(t.alice, moved.draftId, { sendAt: at(120) });
      await t.client.inboxes.drafts.delete(t.alice, cancelled.draftId);
      await t.client.inboxes.drafts.update(t.alice, unscheduled.draftId, { sendAt: null });

      clock.advance(61_000);
      expect(await runner.drain()).toBe(0);
      expect(await subjectsIn(server, t.key, t.bob)).toEqual([]);
      clock.advance(60_000);
      expect(await runner.drain()).toBe(1);
      expect(await subjectsIn(server, t.key, t.bob)).toEqual(['moved']);
      expect((await t.client.inboxes.drafts.list(t.alice)).drafts.map((d) => d.subject)).toEqual(['unscheduled']);
      clock.advance(3_600_000);
      expect(await runner.drain()).toBe(0);
      expect(await subjectsIn(server, t.key, t.bob)).toEqual(['moved']);
      const sent = await eventsOf(server, { inboxId: t.alice, type: 'message.sent' });
      expect(sent).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('a job withdrawn too late (already claimed when the draft was rescheduled) ends without sending; the new schedule sends once', async () => {
    const clock = fixedClock(start);
    const server = await startInboxServer({ dialect, clock, env: { INBOX_ROLES: 'api' } });
    try {
      const t = await scheduledSetup(server);
      const runner = server.service.runtime.runner;
      const db = server.service.runtime.services.db;
      const at = (s: number) => new Date(clock.now().getTime() + s * 1000);
      const draft = await t.client.inboxes.drafts.create(t.alice, {
        to: [t.bob],
        subject: 'moved late',
        text: 'x',
        sendAt: at(60),
      });
      await t.client.inboxes.drafts.update(t.alice, draft.draftId, { sendAt: at(120) });
      // cancelJob leaves a claimed job alone: put the old one back as if it had been running then.
      const old = await db
        .updateTable('jobs')
        .set({ status: 'pending', last_error: null })
        .where('queue', '=', 'drafts.send')
        .where('last_error', '=', 'cancelled')
        .where('payload', 'like', `%${draft.draftId}%`)
        .executeTakeFirst();
      expect(old.numUpdatedRows).toBe(1n);

      clock.advance(61_000);
      expect(await runner.drain()).toBe(1);
      expect(await subjectsIn(server, t.key, t.bob)).toEqual([]);
      expect(await t.client.inboxes.drafts.get(t.alice, draft.draftId)).toMatchObject({
        sendStatus: 'scheduled',
        labels: ['scheduled'],
      });
      clock.advance(60_000);
      expect(await runner.drain()).toBe(1);
      expect(await subjectsIn(server, t.key, t.bob)).toEqual(['moved late']);
    } finally {
      await server.close();
    }
  });

  it('leaves a draft the rules refuse with send_status failed (not scheduled), to be fixed and rescheduled', async () => {
    const clock = fixedClock(start);
    const server = await startInboxServer({ dialect, clock, env: { INBOX_ROLES: 'api' } });
    try {
      const t = await scheduledSetup(server);
      const runner = server.service.runtime.runner;
      const draft = await t.client.inboxes.drafts.create(t.alice, {
        subject: 'no one to send to',
        text: 'x',
        sendAt: new Date(clock.now().getTime() + 1_000),
      });
      clock.advance(2_000);
      expect(await runner.drain()).toBe(1);
      const failed = await call(server.url, t.key, 'GET', `/v0/drafts/${draft.draftId}`);
      expectWire(wire.Draft, failed.body);
      expect(failed.body).toMatchObject({ send_status: 'failed', labels: [] });
      const fixed = await t.client.inboxes.drafts.update(t.alice, draft.draftId, {
        to: [t.bob],
        sendAt: new Date(clock.now().getTime() + 1_000),
      });
      expect(fixed.sendStatus).toBe('scheduled');
      clock.advance(2_000);
      expect(await runner.drain()).toBe(1);
      expect(await subjectsIn(server, t.key, t.bob)).toEqual(['no one to send to']);
    } finally {
      await server.close();
    }
  });

  it('sends for an unverified agent sign-up only to its human, at send_at as when sent by hand', async () => {
    const clock = fixedClock(start);
    const server = await startInboxServer({ dialect, clock, env: { INBOX_ROLES: 'api' } });
    try {
      const t = await scheduledSetup(server);
      // The organization is an agent sign-up whose human (bob's address here) has not entered the code yet.
      await server.service.runtime.services.db
        .insertInto('agent_signups')
        .values({
          organization_id: t.organizationId,
          human_email: t.bob,
          inbox_id: t.alice,
          code_hash: 'x'.repeat(64),
          code_expires_at: clock.now().toISOString(),
          attempts: 0,
          verified_at: null,
          created_at: clock.now().toISOString(),
        })
        .execute();
      const carol = 'carol@inbox.test';
      const sendAt = new Date(clock.now().getTime() + 1_000);
      const refused = await t.client.inboxes.drafts.create(t.alice, { to: [carol], text: 'x', sendAt });
      const allowed = await t.client.inboxes.drafts.create(t.alice, {
        to: [t.bob],
        subject: 'to my human',
        text: 'x',
        sendAt,
      });
      const byHand = await t.client.inboxes.drafts.create(t.alice, { to: [carol], text: 'x' });
      expectError(
        await call(server.url, t.key, 'POST', `/v0/inboxes/${enc(t.alice)}/drafts/${byHand.draftId}/send`, {}),
        403,
        'permission_error',
        'MESSAGE_REJECTED',
      );
      clock.advance(2_000);
      expect(await server.service.runtime.runner.drain()).toBe(2);
      expect((await t.client.drafts.get(refused.draftId)).sendStatus).toBe('failed');
      await expect(t.client.drafts.get(allowed.draftId)).rejects.toBeInstanceOf(AgentMail.NotFoundError);
      expect(await subjectsIn(server, t.key, t.bob)).toEqual(['to my human']);
    } finally {
      await server.close();
    }
  });

  it('answers 409 while a scheduled send is under way, and a worker that died mid-send is taken over: sent once', async () => {
    const database = createInboxTestDatabase(dialect);
    const clock = fixedClock(start);
    try {
      const first = await startInboxServer({ database, clock, env: { INBOX_ROLES: 'api' } });
      let t: Awaited<ReturnType<typeof scheduledSetup>>;
      let draftId: string;
      try {
        t = await scheduledSetup(first);
        const draft = await t.client.inboxes.drafts.create(t.alice, {
          to: [t.bob],
          subject: 'taken over',
          text: 'x',
          sendAt: new Date(clock.now().getTime() + 1_000),
        });
        draftId = draft.draftId;
        // A worker took the job and marked the draft sending, then died: its lease ran out.
        const db = first.service.runtime.services.db;
        await db.updateTable('drafts').set({ send_status: 'sending' }).where('draft_id', '=', draftId).execute();
        await db
          .updateTable('jobs')
          .set({ attempts: 1, locked_until: new Date(clock.now().getTime() - 1).toISOString() })
          .where('queue', '=', 'drafts.send')
          .execute();
        const one = `/v0/inboxes/${enc(t.alice)}/drafts/${draftId}`;
        expectError(
          await call(first.url, t.key, 'PATCH', one, { subject: 'late edit' }),
          409,
          'conflict',
          'DRAFT_BEING_SENT',
        );
        expectError(await call(first.url, t.key, 'DELETE', one), 409, 'conflict', 'DRAFT_BEING_SENT');
        expectError(await call(first.url, t.key, 'POST', `${one}/send`, {}), 409, 'conflict', 'DRAFT_BEING_SENT');
        const err = (await t.client.inboxes.drafts
          .update(t.alice, draftId, { subject: 'x' })
          .catch((e: unknown) => e)) as AgentMailError;
        expect(err).toBeInstanceOf(AgentMail.ConflictError);
        expect((await t.client.drafts.get(draftId)).sendStatus).toBe('sending');
      } finally {
        await first.close();
      }
      clock.advance(2_000);
      const second = await startInboxServer({ database, clock, jobPollMs: 20 });
      try {
        await expect
          .poll(async () => subjectsIn(second, t.key, t.bob), { timeout: 10_000, interval: 20 })
          .toEqual(['taken over']);
        expect(await second.service.runtime.runner.drain()).toBe(0);
        expectError(await call(second.url, t.key, 'GET', `/v0/drafts/${draftId}`), 404, 'not_found', 'DRAFT_NOT_FOUND');
        expect(await subjectsIn(second, t.key, t.alice)).toEqual(['taken over']);
      } finally {
        await second.close();
      }
    } finally {
      await database.drop();
    }
  });

  it('sends a draft scheduled before a restart exactly once, by the worker of the next process', async () => {
    const database = createInboxTestDatabase(dialect);
    const clock = fixedClock(start);
    try {
      const first = await startInboxServer({ database, clock, env: { INBOX_ROLES: 'api' } });
      let t: Awaited<ReturnType<typeof scheduledSetup>>;
      try {
        t = await scheduledSetup(first);
        await t.client.inboxes.drafts.create(t.alice, {
          to: [t.bob],
          subject: 'after restart',
          text: 'x',
          sendAt: new Date(clock.now().getTime() + 30_000),
        });
        expect(await first.service.runtime.runner.drain()).toBe(0);
      } finally {
        await first.close();
      }
      clock.advance(31_000);
      const second = await startInboxServer({ database, clock, jobPollMs: 20 });
      try {
        await expect
          .poll(async () => subjectsIn(second, t.key, t.bob), { timeout: 10_000, interval: 20 })
          .toEqual(['after restart']);
        expect(await second.service.runtime.runner.drain()).toBe(0);
      } finally {
        await second.close();
      }
      // A third process, much later, finds nothing left to send.
      clock.advance(86_400_000);
      const third = await startInboxServer({ database, clock, env: { INBOX_ROLES: 'api' } });
      try {
        expect(await third.service.runtime.runner.drain()).toBe(0);
        expect(await subjectsIn(third, t.key, t.bob)).toEqual(['after restart']);
        expect(await eventsOf(third, { inboxId: t.alice, type: 'message.sent' })).toHaveLength(1);
        expect((await third.client(t.key).drafts.list()).count).toBe(0);
      } finally {
        await third.close();
      }
    } finally {
      await database.drop();
    }
  });
});

describe.each(dialects)('%s: draft size limits', (dialect) => {
  let small: InboxTestServer;
  beforeAll(async () => {
    small = await startInboxServer({
      dialect,
      // A draft's attachments together may be what one request could give: inline and by url (none here).
      env: { INBOX_MAX_ATTACHMENT_BYTES: '1000', INBOX_ATTACHMENT_URL_MAX_BYTES: '0', INBOX_MAX_BODY_BYTES: '1024' },
    });
  });
  afterAll(async () => {
    await small?.close();
  });

  it('refuses a body over INBOX_MAX_BODY_BYTES and attachments over INBOX_MAX_ATTACHMENT_BYTES on create and update; a refused change leaves the draft as it was', async () => {
    const org = await organization(small, [unique('alice'), unique('bob')]);
    const [alice, bob] = org.inboxes as [string, string];
    const base = `/v0/inboxes/${enc(alice)}/drafts`;
    expectError(
      await call(small.url, org.key, 'POST', base, { to: [bob], text: 'x'.repeat(1025) }),
      400,
      'validation_error',
      'BODY_TOO_LARGE',
      'text',
    );
    expectError(
      await call(small.url, org.key, 'POST', base, { to: [bob], attachments: [{ content: b64(Buffer.alloc(1001)) }] }),
      400,
      'validation_error',
      'ATTACHMENTS_TOO_LARGE',
      'attachments',
    );
    const created = await call(small.url, org.key, 'POST', base, {
      to: [bob],
      text: 'ok',
      attachments: [{ filename: 'a', content: b64(Buffer.alloc(600)) }],
    });
    expect(created.status).toBe(201);
    const one = `${base}/${created.body.draft_id}`;
    expectError(
      await call(small.url, org.key, 'PATCH', one, { html: `<p>${'ü'.repeat(511)}</p>` }),
      400,
      'validation_error',
      'BODY_TOO_LARGE',
      'html',
    );
    // The stored 600 bytes and the added 401 make 1,001: over the limit, though each fits alone.
    expectError(
      await call(small.url, org.key, 'PATCH', one, {
        add_attachments: [{ filename: 'b', content: b64(Buffer.alloc(401)) }],
      }),
      400,
      'validation_error',
      'ATTACHMENTS_TOO_LARGE',
      'attachments',
    );
    const unchanged = await call(small.url, org.key, 'GET', one);
    expect(unchanged.body).toMatchObject({ text: 'ok', attachments: [{ filename: 'a', size: 600 }] });
    expect(unchanged.body.html).toBeUndefined();
    const swapped = await call(small.url, org.key, 'PATCH', one, {
      remove_attachments: [created.body.attachments[0].attachment_id],
      add_attachments: [{ filename: 'b', content: b64(Buffer.alloc(1000)) }],
    });
    expect(swapped.status).toBe(200);
    expect(swapped.body.attachments.map((a: { filename: string }) => a.filename)).toEqual(['b']);

    // A draft's download link ends with the draft: once sent, its attachment is the message's.
    const link = await call(
      small.url,
      org.key,
      'GET',
      `${one}/attachments/${swapped.body.attachments[0].attachment_id}`,
    );
    expect((await fetch(link.body.download_url)).status).toBe(200);
    expect((await call(small.url, org.key, 'POST', `${one}/send`, {})).status).toBe(200);
    const gone = await fetch(link.body.download_url);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { type: string } }).error.type).toBe('not_found');
  });
});
