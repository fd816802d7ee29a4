import * as wire from 'agentmail/serialization';

/**
 * Strict checks of response bodies against agentmail 0.5.27's own wire schemas (the SDK skips
 * validation when it reads responses, so a missing field would otherwise pass unnoticed).
 *
 * `schema` names a serialization schema of the SDK, dotted for nested namespaces: `Thread`,
 * `ListThreadsResponse`, `inboxes.Inbox`, `pods.Pod`, `webhooks.Webhook`. The body is the raw
 * JSON as sent (snake_case). Unknown keys fail too, unless `allowExtraKeys` says which are ours.
 */
export function expectWireShape(schema: string, body: unknown, options: { allowExtraKeys?: boolean } = {}): void {
  const found = schema
    .split('.')
    .reduce<unknown>((at, part) => (at as Record<string, unknown> | undefined)?.[part], wire);
  if (!found || typeof (found as { parse?: unknown }).parse !== 'function')
    throw new Error(`agentmail/serialization has no schema ${schema}`);
  const parsed = (
    found as { parse: (raw: unknown, opts: object) => { ok: boolean; errors?: { path: string[]; message: string }[] } }
  ).parse(body, {
    unrecognizedObjectKeys: options.allowExtraKeys ? 'passthrough' : 'fail',
    allowUnrecognizedUnionMembers: false,
    allowUnrecognizedEnumValues: false,
    skipValidation: false,
  });
  const problems = parsed.ok ? [] : (parsed.errors ?? []).map((e) => `${e.path.join('.') || '(root)'}: ${e.message}`);
  if (problems.length > 0)
    throw new Error(`${schema} wire shape:\n  ${problems.join('\n  ')}\nbody: ${JSON.stringify(body).slice(0, 2000)}`);
}
