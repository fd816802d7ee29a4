import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The stdio bridge (`npm run cli -- mcp`, bin `agentmail-mcp`): for MCP clients that only start
 * servers as processes. It holds no tools of its own: it forwards `tools/list` and `tools/call` to a
 * running service's /mcp (Streamable HTTP) with the key from AGENTMAIL_API_KEY, as AgentMail's
 * own bridge does for its hosted server; `--tools` narrows what it offers. Stdout carries only the
 * protocol; the key is sent as `x-api-key` and never printed.
 */

export const DEFAULT_MCP_URL = 'http://127.0.0.1:3000/mcp';
/** Long enough for the longest wait_for_message (120 s) and the way there and back. */
const CALL_TIMEOUT_MS = 180_000;

export interface BridgeOptions {
  readonly url: string;
  readonly apiKey: string;
  /** Only these tools are listed and callable; all when absent. */
  readonly tools?: readonly string[];
}

/** `--tools a,b` → the names; an empty list is a usage error. */
export function parseToolList(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!names.length) throw new Error('--tools needs a comma-separated list of tool names');
  return names;
}

/** Runs until the MCP client closes stdin (or the server goes away). */
export async function runStdioBridge(options: BridgeOptions): Promise<void> {
  const remote = new Client({ name: 'agentmail-stdio-bridge', version: '0.1.0' });
  try {
    await remote.connect(
      new StreamableHTTPClientTransport(new URL(options.url), {
        requestInit: { headers: { 'x-api-key': options.apiKey } },
      }),
    );
  } catch (err) {
    const why = (err as Error).message.replaceAll(options.apiKey, '…');
    throw new Error(
      /\b401\b|unauthori[sz]ed|authentication_error/i.test(why)
        ? `the MCP server at ${options.url} refused the key in AGENTMAIL_API_KEY (401)`
        : `cannot reach the MCP server at ${options.url}: ${(err as { cause?: Error }).cause?.message ?? why}`,
      { cause: err },
    );
  }
  const allowed = options.tools ? new Set(options.tools) : undefined;
  const info = remote.getServerVersion();
  const local = new Server(
    { name: info?.name ?? 'agentmail', version: info?.version ?? '0.1.0' },
    {
      capabilities: { tools: {} },
      ...(remote.getInstructions() ? { instructions: remote.getInstructions() as string } : {}),
    },
  );
  local.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const listed = await remote.listTools(request.params);
    return allowed ? { ...listed, tools: listed.tools.filter((t) => allowed.has(t.name)) } : listed;
  });
  local.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (allowed && !allowed.has(request.params.name))
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name.slice(0, 100)}`);
    return (await remote.callTool(request.params, undefined, {
      signal: extra.signal,
      timeout: CALL_TIMEOUT_MS,
    })) as CallToolResult;
  });
  const ended = new Promise<void>((resolve) => {
    local.onclose = () => {
      void remote.close();
      resolve();
    };
  });
  remote.onclose = () => void local.close();
  const stdio = new StdioServerTransport();
  await local.connect(stdio);
  // The client closing our stdin ends the bridge.
  process.stdin.once('end', () => void local.close());
  await ended;
}
