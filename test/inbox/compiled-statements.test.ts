import { DefaultQueryCompiler } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliver } from '../support/smtp-client.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { call, enc, organization, unique } from './fixtures.js';
import { simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

/**
 * Decision 0007: the statements of the hot paths are compiled once (`runCompiledOnce`,
 * `runSqlOnce`, `insertCompiledOnce`), not built and compiled by Kysely on every call. A statement
 * added later to a send or a delivery the usual way (the folders' UIDs, the search documents once
 * were) puts Kysely's query building back on every message; this test names it. Kysely compiles
 * through its dialect's query compiler, so every compilation is counted there, while a send, a
 * list (REST and MCP) and an SMTP delivery run a second time with the shapes of the first.
 */
describe.each(dialects)('%s: the hot paths compile no statement after their first run', (dialect) => {
  let server: InboxTestServer;
  const compiled: string[] = [];
  let counting = false;
  const original = Object.getOwnPropertyDescriptor(DefaultQueryCompiler.prototype, 'compileQuery')
    ?.value as DefaultQueryCompiler['compileQuery'];

  beforeAll(async () => {
    // Without the test servers' check that compiles every cached statement again on each run.
    server = await startInboxServer({ dialect, env: { DB_VERIFY_STATEMENT_CACHE: 'false' }, jobPollMs: 3_600_000 });
    DefaultQueryCompiler.prototype.compileQuery = function counted(this: DefaultQueryCompiler, ...args) {
      const query = original.apply(this, args);
      if (counting) compiled.push(query.sql);
      return query;
    };
  });
  afterAll(async () => {
    DefaultQueryCompiler.prototype.compileQuery = original;
    await server?.close();
  });

  async function counted(work: () => Promise<void>): Promise<string[]> {
    compiled.length = 0;
    counting = true;
    try {
      await work();
    } finally {
      counting = false;
    }
    return [...compiled];
  }

  it('an API send to a local inbox, its list through REST and MCP, and an SMTP delivery', async () => {
    const { key, inboxes } = await organization(server, [unique('from'), unique('to')]);
    const [from, to] = inboxes as [string, string];
    const port = smtpPort(server);
    const round = async (n: number) => {
      const sent = await call(server.url, key, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, {
        to: [to],
        subject: `Hello ${n}`,
        text: 'A short message.',
      });
      expect(sent.status).toBe(200);
      const listed = await call(server.url, key, 'GET', `/v0/inboxes/${enc(to)}/messages?limit=10`);
      expect(listed.status).toBe(200);
      expect(listed.body.count).toBe(2 * n - 1);
      const mcp = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          'x-api-key': key,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: n,
          method: 'tools/call',
          params: { name: 'list_messages', arguments: { inboxId: to, limit: 10 } },
        }),
      });
      const answer = (await mcp.json()) as { result: { isError?: boolean; structuredContent: { count: number } } };
      expect(answer.result.isError).toBeUndefined();
      expect(answer.result.structuredContent.count).toBe(2 * n - 1);
      await deliver(port, {
        from: 'a@sender.example',
        to: [to],
        message: simpleMessage({ from: 'A <a@sender.example>', to, messageId: `<${unique('m')}@sender.example>` }),
      });
    };
    // The first round compiles each shape once; a round checks that it did its work.
    expect(await counted(() => round(1))).not.toEqual([]);
    expect(await counted(() => round(2))).toEqual([]);
  });
});
