import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';

/**
 * The official MCP client (`@modelcontextprotocol/sdk` Client over Streamable HTTP), as an agent's
 * runtime uses it, pointed at a server's /mcp with a key. `call` checks every successful result
 * against the tool's output schema itself too (the SDK does as well), so a test cannot pass on a
 * result the schema does not describe.
 */
export interface McpTestClient {
  readonly client: Client;
  readonly tools: Tool[];
  /** A tool's structured result; fails the test on an isError result. */
  call(name: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** The raw result, error or not. */
  raw(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);

export async function connectMcp(
  serverUrl: string,
  key: string,
  how: 'x-api-key' | 'bearer' = 'x-api-key',
): Promise<McpTestClient> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const headers: Record<string, string> =
    how === 'x-api-key' ? { 'x-api-key': key } : { authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', serverUrl), { requestInit: { headers } }));
  const { tools } = await client.listTools();
  const validators = new Map<string, ValidateFunction>(
    tools.filter((t) => t.outputSchema).map((t) => [t.name, ajv.compile(t.outputSchema as object)]),
  );
  const raw = async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  return {
    client,
    tools,
    raw,
    async call(name, args = {}) {
      const result = await raw(name, args);
      expect(result.isError, `${name}: ${JSON.stringify(result.content).slice(0, 500)}`).toBeFalsy();
      const structured = result.structuredContent as Record<string, unknown>;
      const validate = validators.get(name);
      expect(validate, `${name} has an output schema`).toBeDefined();
      const ok = validate!(structured);
      expect(ok, `${name}: ${JSON.stringify(validate!.errors)}`).toBe(true);
      return structured;
    },
    close: () => client.close(),
  };
}

/** The API error body of an isError result (its text holds the message, then the body as JSON). */
export function toolError(result: CallToolResult): { type: string; message: string; details: Record<string, unknown> } {
  expect(result.isError).toBe(true);
  const text = (result.content[0] as { text: string }).text;
  return (JSON.parse(text.slice(text.indexOf('\n\n') + 2)) as { error: never }).error;
}
