import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentMailClient } from 'agentmail';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module script without types
import { staleReason } from '../scripts/build-once.mjs';
import { dialects, freshPostgresSchema } from './support/dialects.js';

/**
 * What `npm start` and `npm run cli` run: the bundle of `dist/bundle/` (scripts/build-bundle.ts),
 * started as a process the way the README starts it, through scripts/build-once.mjs. The rest of
 * the suite runs the TypeScript sources; this file proves that the bundle finds what it loads at
 * run time: the packages it leaves in node_modules (pg, mailparser, mailauth, nodemailer, ws),
 * its worker threads' task modules, the Swagger UI and admin files, and the migrations.
 */
const ROOT = path.resolve(import.meta.dirname, '..');

/** Resolves with the child's exit code, also when it has already exited. */
const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

/** The port of the first `<scheme>://host:port` on the line `label` of the bundle's start-up lines. */
const portOf = (output: string, label: string) => {
  const port = new RegExp(`^${label}:\\s+\\w+://[^:/]+:(\\d+)(?=[/\\n])`, 'm').exec(output)?.[1];
  return port === undefined ? undefined : Number(port);
};

function run(entry: string, env: NodeJS.ProcessEnv, args: string[] = []): ReturnType<typeof spawnSync> {
  return spawnSync(process.execPath, ['scripts/build-once.mjs', 'run', entry, ...args], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

beforeAll(() => {
  // `npm ci` built it (the `prepare` script); a tree changed since is built again, as `npm start` would.
  if ((staleReason as () => string | undefined)() !== undefined) {
    const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8' });
    expect(build.status, build.stderr).toBe(0);
  }
}, 300_000);

describe.each(dialects)('%s: the bundle npm start runs', (dialect) => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let child: ChildProcess;
  let output = '';
  let pgSchema: ReturnType<typeof freshPostgresSchema> | undefined;
  const ports = { inbox: 0, property: 0, smtp: 0 };

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'bundle-'));
    pgSchema = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    env = {
      ...process.env,
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      // Every listener on a port the system picks, read back from the lines the bundle prints: a
      // port found free here and bound by the child later could be taken by another test between.
      INBOX_PORT: '0',
      PROPERTY_PORT: '0',
      INBOX_SMTP_PORT: '0',
      INBOX_IMAP_PORT: '0',
      INBOX_SUBMISSION_PORT: '0',
      ...(pgSchema ? { INBOX_DATABASE_URL: pgSchema.url } : {}),
    };
    child = spawn(process.execPath, ['scripts/build-once.mjs', 'run', 'bundle/main.js'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const started = Date.now();
    for (;;) {
      const property = portOf(output, 'Property service');
      if (property !== undefined) {
        Object.assign(ports, {
          inbox: portOf(output, 'Inbox service'),
          property,
          smtp: portOf(output, 'Inbox SMTP'),
        });
        expect(
          Object.values(ports).every((p) => typeof p === 'number' && p > 0),
          output,
        ).toBe(true);
        break;
      }
      if (child.exitCode !== null || Date.now() - started > 60_000)
        throw new Error(`the bundle did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    for (;;) {
      const up = await Promise.all(
        [ports.inbox, ports.property].map((p) =>
          fetch(`http://127.0.0.1:${p}/healthz`).then(
            (r) => r.ok,
            () => false,
          ),
        ),
      );
      if (up.every(Boolean)) break;
      if (child.exitCode !== null || Date.now() - started > 60_000)
        throw new Error(`the bundle did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited(child);
    }
    await pgSchema?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves both services, their docs and the admin, and a CLI key works against it', async () => {
    expect(existsSync(path.join(ROOT, 'dist/bundle/main.js'))).toBe(true);
    const cli = run('bundle/cli.js', env, ['inbox:keys:create', '--name', 'bundle']);
    expect(cli.status, String(cli.stderr)).toBe(0);
    const key = String(cli.stdout).trim().split('\n').at(-1) as string;
    expect(key).toMatch(/^am_/);
    const client = new AgentMailClient({ apiKey: key, baseUrl: `http://127.0.0.1:${ports.inbox}` });
    const inbox = await client.inboxes.create({ username: 'bundled' });

    // A send over the off-thread JSON limit (1 MiB): parsed and composed in the worker threads.
    const big = Buffer.alloc(1536 * 1024, 7).toString('base64');
    const sent = await client.inboxes.messages.send(inbox.inboxId, {
      to: inbox.inboxId,
      subject: 'through the bundle',
      text: 'big',
      attachments: [{ filename: 'big.bin', content: big }],
    });
    const received = (await client.inboxes.messages.list(inbox.inboxId)).messages.filter(
      (m) => m.subject === 'through the bundle',
    );
    expect(received.map((m) => m.labels.includes('sent') || m.labels.includes('received')).every(Boolean)).toBe(true);
    const stored = await client.inboxes.messages.get(inbox.inboxId, sent.messageId);
    expect(stored.attachments?.map((a) => [a.filename, a.size])).toEqual([['big.bin', 1536 * 1024]]);

    // Inbound SMTP: parsed, checked (mailauth) and stored.
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: ports.smtp,
      secure: false,
      ignoreTLS: true,
      name: 'mta.example.org',
    });
    await transport.sendMail({
      from: 'alice@example.org',
      to: inbox.inboxId,
      subject: 'over smtp',
      text: 'hello',
      attachments: [{ filename: 'a.txt', content: 'attached' }],
    });
    transport.close();
    const inbound = (await client.inboxes.messages.list(inbox.inboxId)).messages.find((m) => m.subject === 'over smtp');
    expect(inbound?.labels).toContain('received');
    expect(
      (await client.inboxes.messages.get(inbox.inboxId, inbound?.messageId as string)).attachments?.map(
        (a) => a.filename,
      ),
    ).toEqual(['a.txt']);

    // Real-time events over the bundle's WebSocket server.
    const socket = await client.websockets.connect({ reconnectAttempts: 0 });
    const frames: { type: string; eventType?: string }[] = [];
    socket.on('message', (m) => frames.push(m as { type: string }));
    await socket.waitForOpen();
    socket.sendSubscribe({ type: 'subscribe', eventTypes: ['message.received'] });
    await client.inboxes.messages.send(inbox.inboxId, { to: inbox.inboxId, subject: 'live', text: 'x' });
    for (let i = 0; i < 200 && !frames.some((f) => f.eventType === 'message.received'); i++)
      await new Promise((r) => setTimeout(r, 25));
    socket.close();
    expect(frames.map((f) => f.type)).toContain('subscribed');
    expect(frames.some((f) => f.type === 'event' && f.eventType === 'message.received')).toBe(true);

    const docs = await fetch(`http://127.0.0.1:${ports.inbox}/v0/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('/v0/docs/ui/');
    // Swagger UI's files come from swagger-ui-dist in node_modules.
    const ui = await fetch(`http://127.0.0.1:${ports.inbox}/v0/docs/ui/swagger-ui-bundle.js`);
    expect(ui.status).toBe(200);
    expect((await ui.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    const entrypoint = await fetch(`http://127.0.0.1:${ports.property}/api`, {
      headers: { accept: 'application/ld+json' },
    });
    expect(((await entrypoint.json()) as Record<string, unknown>)['@id']).toBe('/api');
    const admin = await fetch(`http://127.0.0.1:${ports.property}/admin`);
    expect(admin.status).toBe(200);
    expect(await admin.text()).toMatch(/assets\/admin-[A-Z0-9]+\.js/);
  }, 60_000);

  it('stops cleanly on SIGTERM', async () => {
    expect(child.exitCode, `the bundle exited before SIGTERM:\n${output}`).toBeNull();
    child.kill('SIGTERM');
    expect(await exited(child), output).toBe(0);
  }, 30_000);
});
