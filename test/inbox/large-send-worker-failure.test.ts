import { channel } from 'node:diagnostics_channel';
import type { EventLoopUtilization } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LARGE_STRING_BYTES,
  OFFLOAD_BASE64_CHARS,
  OFFLOAD_COMPOSE_BYTES,
  OFFLOAD_JSON_BYTES,
  OFFLOAD_WORDS_CHARS,
} from '../../src/inbox/offload.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, organization, unique } from './fixtures.js';

/**
 * A large send whose worker thread dies while it runs one of the send's tasks (src/inbox/offload.ts,
 * inbox.tasks.ts): the request gets the service's error body with a 5xx, nothing of the send is
 * stored or counted, the server goes on answering, and the next large send runs on a new thread
 * (docs/decisions/0012-large-sends-off-the-event-loop.md).
 *
 * No mock: real requests, the real pool and its real threads. The threads are reached through
 * Node's built-in `worker_threads` diagnostics channel, which hands over every Worker this process
 * starts; the test watches what the pool posts to each (`{ task, input }`) and terminates the
 * thread once its event loop has been busy with the chosen task for a few milliseconds (its event
 * loop utilization, read from this thread), i.e. mid-task, before it could answer.
 */

type Task = 'parseJson' | 'decodeBase64' | 'compose' | 'bodyWords';

/** A thread started in this process, with what the pool asked of it and what it answered. */
interface Watched {
  readonly worker: Worker;
  readonly posted: Task[];
  replies: number;
  exited: boolean;
}

const watched: Watched[] = [];
/** Set by `killDuring`: the task whose thread is to die, and what to do once it has. */
let armed: { task: Task; onPost(thread: Watched, before: EventLoopUtilization): void } | undefined;

function watch(worker: Worker): void {
  const thread: Watched = { worker, posted: [], replies: 0, exited: false };
  watched.push(thread);
  worker.on('message', () => (thread.replies += 1));
  worker.on('exit', () => (thread.exited = true));
  // A pass-through: the pool's own postMessage runs unchanged; the test only learns which task
  // went to which thread. Installed before the pool's first post (the channel reports the Worker
  // from its constructor).
  const post = worker.postMessage.bind(worker);
  worker.postMessage = (value: unknown, transfer?: Parameters<Worker['postMessage']>[1]) => {
    const task = (value as { task?: Task }).task;
    if (task) thread.posted.push(task);
    const before = worker.performance.eventLoopUtilization();
    post(value, transfer);
    const kill = armed;
    if (kill && task === kill.task) {
      armed = undefined;
      kill.onPost(thread, before);
    }
  };
}

const workerStarted = channel('worker_threads');
const onWorkerStarted = (message: unknown) => watch((message as { worker: Worker }).worker);

/** How long the thread's event loop has been busy with the task when it is killed: mid-task, well before it could answer. */
const BUSY_BEFORE_KILL_MS = 3;

/**
 * Arms the next post of `task` to end its thread once that thread's event loop has been busy for
 * BUSY_BEFORE_KILL_MS since the post. Resolves with the thread after it exited, and whether it had
 * answered the task by then (it must not have: then the kill came too late); or, when the task
 * ended before the kill was due, with `answered` and the thread left alive.
 */
function killDuring(task: Task): Promise<{ thread: Watched; answered: boolean; busyMs: number }> {
  return new Promise((resolve, reject) => {
    armed = {
      task,
      onPost(thread, before) {
        const repliesAtPost = thread.replies;
        if (repliesAtPost === 0) {
          reject(
            new Error(
              `the ${task} task went to a thread that had not answered before (still starting up); warm the pool first`,
            ),
          );
          return;
        }
        const poll = () => {
          const busyMs = thread.worker.performance.eventLoopUtilization(before).active;
          if (thread.exited) {
            reject(new Error(`the ${task} thread exited before it was killed (busy ${busyMs.toFixed(1)} ms)`));
          } else if (thread.replies > repliesAtPost) {
            // Too late: the task ended before this thread polled again. Left alive; the caller tries again.
            resolve({ thread, answered: true, busyMs });
          } else if (busyMs >= BUSY_BEFORE_KILL_MS) {
            thread.worker.once('exit', () => resolve({ thread, answered: thread.replies > repliesAtPost, busyMs }));
            void thread.worker.terminate();
          } else {
            setImmediate(poll);
          }
        };
        setImmediate(poll);
      },
    };
  });
}

describe.each(dialects)('%s: a large send whose worker thread dies', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    workerStarted.subscribe(onWorkerStarted);
    server = await startInboxServer({ dialect, env: { INBOX_MAX_ATTACHMENT_BYTES: String(8 * 1024 * 1024) } });
  });
  afterAll(async () => {
    armed = undefined;
    workerStarted.unsubscribe(onWorkerStarted);
    await server?.close();
  });

  /**
   * A send that runs all four tasks in the inbox's worker threads, in this order: parseJson (the
   * attachment's base64, then the text, as strings), decodeBase64 (the attachment), compose (the message) and
   * bodyWords (its search words); each big enough to keep its thread busy for tens of
   * milliseconds. The base64 is wrapped in lines as MIME writes it: the body's reader cannot
   * decode that as it arrives (decision 0029), so the string is parsed and decoded in threads.
   */
  function largeSend(to: string, subject: string): string {
    const words = Array.from({ length: 60_000 }, (_, i) => `wort${(i * 7919) % 20_011}`).join(' ');
    const text = `${subject} ${words}`.slice(0, 1_500_000);
    const file = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < file.length; i++) file[i] = (i * 131) & 0xff;
    const content = b64(file).replace(/(.{76})/g, '$1\n');
    // The attachment before the text: its string is parsed first, and long enough to be killed mid-task.
    const body = JSON.stringify({ to, subject, attachments: [{ filename: 'data.bin', content }], text });
    expect(body.length).toBeGreaterThanOrEqual(OFFLOAD_JSON_BYTES);
    expect(content.length).toBeGreaterThanOrEqual(Math.max(OFFLOAD_BASE64_CHARS, LARGE_STRING_BYTES));
    expect(text.length).toBeGreaterThanOrEqual(Math.max(OFFLOAD_COMPOSE_BYTES, OFFLOAD_WORDS_CHARS));
    return body;
  }

  /** Everything a send leaves behind, for the organization and its inboxes, read from the database. */
  async function traces(organizationId: string, inboxes: readonly string[]) {
    const db = server.service.database.db;
    const count = async (q: { executeTakeFirstOrThrow(): Promise<{ n: number | string | bigint }> }) =>
      Number((await q.executeTakeFirstOrThrow()).n);
    return {
      messages: await count(
        db
          .selectFrom('messages')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('inbox_id', 'in', inboxes),
      ),
      // Blobs belong to no inbox: every piece in the database (the suite's sends run one at a time).
      blobChunks: await count(db.selectFrom('blob_chunks').select((eb) => eb.fn.countAll().as('n'))),
      threads: await count(
        db
          .selectFrom('threads')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('organization_id', '=', organizationId),
      ),
      events: await count(
        db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('organization_id', '=', organizationId),
      ),
      // Rows and their sum: creating the inboxes counted inbox_count already.
      usage: await count(
        db
          .selectFrom('usage_counts')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('organization_id', '=', organizationId),
      ),
      usageTotal: await count(
        db
          .selectFrom('usage_counts')
          .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('value'), eb.val(0)).as('n'))
          .where('organization_id', '=', organizationId),
      ),
      sendCounters: await count(
        db
          .selectFrom('send_counters')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('organization_id', '=', organizationId),
      ),
    };
  }

  const tasks: readonly Task[] = ['parseJson', 'decodeBase64', 'compose', 'bodyWords'];

  it.each(tasks)(
    'answers 500 internal_error when the thread running %s dies, stores and counts nothing, keeps serving, and the next large send runs on a new thread',
    async (task) => {
      // A large send in another organization first: the pool then has a thread that has started up
      // and answered, so the thread killed below is killed while busy with the task itself.
      const warm = await organization(server, [unique('warm'), unique('peer')]);
      const warmed = await call(
        server.url,
        warm.key,
        'POST',
        `/v0/inboxes/${enc(warm.inboxes[0] as string)}/messages/send`,
        largeSend(warm.inboxes[1] as string, 'warm-up'),
      );
      expect(warmed.status).toBe(200);

      // The kill is timed from this thread: on a loaded machine the task may end before it lands.
      // Such a send is not the one under test, so it is tried again, in a new organization.
      const attempt = async () => {
        const org = await organization(server, [unique('big'), unique('peer')]);
        const [from, to] = org.inboxes as [string, string];
        const sendPath = `/v0/inboxes/${enc(from)}/messages/send`;
        const before = await traces(org.organizationId, [from, to]);
        expect(before).toMatchObject({ messages: 0, threads: 0, sendCounters: 0 });
        const killed = killDuring(task);
        const failed = await call(server.url, org.key, 'POST', sendPath, largeSend(to, 'doomed'));
        const outcome = await Promise.race([
          killed,
          new Promise<never>((_, reject) =>
            setTimeout(
              () => reject(new Error(`no ${task} task was posted to a thread (answered ${failed.status})`)),
              5_000,
            ).unref(),
          ),
        ]);
        return { org, from, to, sendPath, before, failed, ...outcome };
      };
      let tried = await attempt();
      for (let again = 0; again < 2 && tried.answered; again++) tried = await attempt();
      const { org, from, to, sendPath, before, failed, thread, answered, busyMs } = tried;
      expect(answered, `the ${task} thread answered before it died`).toBe(false);
      expect(busyMs).toBeGreaterThanOrEqual(BUSY_BEFORE_KILL_MS);
      expect(thread.posted.at(-1)).toBe(task);

      // The service's error body for an unexpected failure: 500, internal_error, the request id, no internals.
      expect(failed.status).toBe(500);
      expect(failed.headers.get('content-type')).toMatch(/^application\/json/);
      expect(Object.keys(failed.body)).toEqual(['error']);
      expect(failed.body.error).toEqual({
        type: 'internal_error',
        message: 'Internal server error.',
        request_id: failed.headers.get('x-request-id'),
      });
      expect(failed.body.error.request_id).toEqual(expect.any(String));

      // Nothing of it stored or counted, in the database and through the API.
      expect(await traces(org.organizationId, [from, to])).toEqual(before);
      for (const inbox of [from, to]) {
        const messages = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages`);
        expect(messages.status).toBe(200);
        expect(messages.body.count).toBe(0);
        const threads = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/threads`);
        expect(threads.status).toBe(200);
        expect(threads.body.count).toBe(0);
      }

      // The server goes on answering: a read and a small send (no worker thread).
      expect((await call(server.url, org.key, 'GET', '/v0/inboxes')).status).toBe(200);
      const small = await call(
        server.url,
        org.key,
        'POST',
        sendPath,
        JSON.stringify({ to, subject: 'small', text: 'still here' }),
      );
      expect(small.status).toBe(200);

      // The next large send succeeds, its tasks on a thread other than the dead one.
      const postsBefore = new Map(watched.map((w) => [w, w.posted.length]));
      const next = await call(server.url, org.key, 'POST', sendPath, largeSend(to, 'after'));
      expect(next.status).toBe(200);
      const postedSince = (w: Watched) => w.posted.slice(postsBefore.get(w) ?? 0).filter((t) => tasks.includes(t));
      const ranOn = watched.filter((w) => postedSince(w).length > 0);
      expect(ranOn.length).toBeGreaterThan(0);
      expect(ranOn).not.toContain(thread);
      // Every task again (parseJson twice: the text and the base64), none on the dead thread.
      expect([...new Set(ranOn.flatMap(postedSince))].sort()).toEqual([...tasks].sort());
      const got = await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(to)}/messages/${enc(next.body.message_id)}`,
      );
      expect(got.status).toBe(200);
      expect(got.body.subject).toBe('after');
      expect(got.body.attachments).toHaveLength(1);
      expect(got.body.attachments[0].size).toBe(5 * 1024 * 1024);
      const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
      expect((list.body.messages as { subject: string }[]).map((m) => m.subject).sort()).toEqual(['after', 'small']);
    },
  );

  it('decodes a large attachment whose base64 is one unbroken string as the body arrives: no thread decodes it, and the bytes are the same', async () => {
    const org = await organization(server, [unique('oneline'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const file = Buffer.alloc(3 * 1024 * 1024 + 1);
    for (let i = 0; i < file.length; i++) file[i] = (i * 2654435761) >>> 24;
    const body = JSON.stringify({
      to,
      subject: 'one line',
      text: 'short',
      attachments: [{ filename: 'd.bin', content: b64(file) }],
    });
    expect(body.length).toBeGreaterThanOrEqual(OFFLOAD_JSON_BYTES);
    const postsBefore = new Map(watched.map((w) => [w, w.posted.length]));
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, body);
    expect(sent.status).toBe(200);
    const posted = watched.flatMap((w) => w.posted.slice(postsBefore.get(w) ?? 0));
    expect(posted).toContain('compose');
    expect(posted).not.toContain('decodeBase64');
    expect(posted).not.toContain('parseJson');
    const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages/${enc(sent.body.message_id)}`);
    const [attachment] = got.body.attachments as { attachment_id: string; size: number }[];
    expect(attachment?.size).toBe(file.length);
    const link = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(to)}/messages/${enc(sent.body.message_id)}/attachments/${enc(attachment?.attachment_id ?? '')}`,
    );
    expect(Buffer.from(await (await fetch(link.body.download_url)).arrayBuffer()).equals(file)).toBe(true);
  });
});
