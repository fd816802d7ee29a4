import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { ROOT, runCli } from '../support/process.js';
import { organization, unique } from './fixtures.js';

/**
 * The stdio bridge (`npm run cli -- mcp`), as a stdio-only MCP client starts it: the official
 * client's stdio transport spawning the CLI, which forwards to a running service's /mcp.
 */

const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

async function bridge(server: InboxTestServer, key: string, extra: string[] = []) {
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  const stderr: string[] = [];
  const transport = new StdioClientTransport({
    command: TSX,
    args: ['src/cli.ts', 'mcp', '--url', `${server.url}/mcp`, ...extra],
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', AGENTMAIL_API_KEY: key },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d: Buffer) => stderr.push(d.toString()));
  await client.connect(transport);
  return { client, stderr };
}

describe.each(dialects)('MCP stdio bridge (%s)', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    org = await organization(server, [unique('stdio'), unique('peer')]);
  });
  afterAll(async () => server?.close());

  it('forwards tools/list and tools/call to the service, with the key from AGENTMAIL_API_KEY, never printing it', async () => {
    const { client, stderr } = await bridge(server, org.key);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('send_message');
      expect(tools.find((t) => t.name === 'get_thread')?.outputSchema).toBeDefined();
      const [a, b] = org.inboxes as [string, string];
      const sent = (await client.callTool({
        name: 'send_message',
        arguments: { inboxId: a, to: [b], subject: 'via stdio', text: 'code 246810' },
      })) as CallToolResult;
      expect(sent.isError).toBeFalsy();
      const waited = (await client.callTool({
        name: 'wait_for_message',
        arguments: { inboxId: b, subject: 'via stdio', after: '2000-01-01T00:00:00Z', timeoutSeconds: 5 },
      })) as CallToolResult;
      expect(
        (waited.structuredContent as { message: { verification: { codes: string[] } } }).message.verification.codes,
      ).toEqual(['246810']);
      const missing = (await client.callTool({
        name: 'get_inbox',
        arguments: { inboxId: 'none@inbox.test' },
      })) as CallToolResult;
      expect(missing.isError).toBe(true);
    } finally {
      await client.close();
    }
    expect(stderr.join('')).not.toContain(org.key);
  });

  it('--tools offers only the tools named, and refuses the others', async () => {
    const { client } = await bridge(server, org.key, ['--tools', 'list_inboxes,get_inbox']);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['list_inboxes', 'get_inbox']);
      await expect(client.callTool({ name: 'delete_inbox', arguments: { inboxId: org.inboxes[0] } })).rejects.toThrow(
        /Unknown tool/,
      );
      const listed = (await client.callTool({ name: 'list_inboxes', arguments: {} })) as CallToolResult;
      expect((listed.structuredContent as { count: number }).count).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('without AGENTMAIL_API_KEY, or with a bad --tools or --url, it stops with a clear error', async () => {
    const noKey = await runCli(['mcp', '--url', `${server.url}/mcp`], { AGENTMAIL_API_KEY: '' });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/AGENTMAIL_API_KEY is not set/);
    expect(noKey.stdout).toBe('');
    const badTools = await runCli(['mcp', '--tools', ','], { AGENTMAIL_API_KEY: 'am_x' });
    expect(badTools.code).toBe(2);
    expect(badTools.stderr).toMatch(/--tools needs/);
    const badUrl = await runCli(['mcp', '--url', 'ftp://x'], { AGENTMAIL_API_KEY: 'am_x' });
    expect(badUrl.code).toBe(2);
    const wrongKey = await runCli(['mcp', '--url', `${server.url}/mcp`], { AGENTMAIL_API_KEY: 'am_wrong' });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/refused the key in AGENTMAIL_API_KEY \(401\)/);
    expect(wrongKey.stderr).not.toContain('am_wrong');
  });
});
