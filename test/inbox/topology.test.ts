import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config/config.js';
import { inboxConfigSpec } from '../../src/inbox/inbox.config.js';
import { createInboxServices, migrateInbox, openInboxDatabase } from '../../src/inbox/service.js';
import { freshPostgresSchema } from '../support/dialects.js';
import { sparePort } from '../support/redis-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { simpleMessage } from './smtp-inbound.helpers.js';

/**
 * The deployment of docs/deploy.md as plain processes: three api+worker instances behind a
 * (client-side, round-robin) balancer, one smtp and one worker process, on one PostgreSQL schema
 * and Redis. One api+worker instance is killed with SIGKILL under load; afterwards every
 * acknowledged send and every acknowledged SMTP message is stored, and every event reached the
 * webhook, twice only if its delivery was in flight at the kill. Runs on PostgreSQL + Redis only
 * (SQLite serves one process).
 */

const root = path.resolve(import.meta.dirname, '../..');
const enabled = Boolean(process.env.TEST_POSTGRES_URL && process.env.TEST_REDIS_URL);

interface Instance {
  readonly name: string;
  readonly child: ChildProcess;
  readonly port: number;
  readonly smtpPort: number;
  output: string;
}

async function until(
  check: () => boolean | Promise<boolean>,
  what: string | (() => string),
  ms: number,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(!enabled)('postgres + redis: 3 api+worker, 1 smtp, 1 worker; one instance killed under load', () => {
  const schema = enabled ? freshPostgresSchema() : undefined;
  const instances: Instance[] = [];
  let receiver: Server;
  let receiverUrl = '';
  /** svix-id of every request the webhook received (an event id), in arrival order. */
  const received: string[] = [];

  const env = (roles: string, port: number, smtpPort: number): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DATA_DIR: path.join(root, 'data-topology-unused'),
    INBOX_DATABASE_URL: schema?.url ?? '',
    INBOX_DATABASE_POOL_SIZE: '4',
    REDIS_URL: process.env.TEST_REDIS_URL ?? '',
    INBOX_DOMAINS: 'topology.test',
    INBOX_WEBHOOK_ALLOW_PRIVATE: 'true',
    INBOX_SMTP_VERIFY_AUTH: 'false',
    INBOX_SMTP_GREETING_DELAY_MS: '0',
    INBOX_ROLES: roles,
    INBOX_PORT: String(port),
    INBOX_SMTP_PORT: String(smtpPort),
  });

  async function start(name: string, roles: string): Promise<Instance> {
    const port = await sparePort();
    const smtpPort = roles.includes('smtp') ? await sparePort() : 0;
    // One process per instance (node with tsx's loader), so that SIGKILL hits the service itself:
    // the tsx command would run it as a child of its own, which outlives a SIGKILL of the parent.
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/inbox/main.ts'], {
      cwd: root,
      env: env(roles, port, smtpPort),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const instance: Instance = { name, child, port, smtpPort, output: '' };
    child.stdout?.on('data', (d: Buffer) => (instance.output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (instance.output += d.toString()));
    instances.push(instance);
    return instance;
  }

  const healthy = async (i: Instance) => {
    try {
      const res = await fetch(`http://127.0.0.1:${i.port}/readyz`);
      return res.status === 200;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push(String(req.headers['svix-id']));
        // A receiver that takes its time, so that deliveries are in flight when the kill comes.
        setTimeout(() => res.writeHead(200).end('ok'), 150);
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    // The schema is created and migrated by the instances themselves, all at once.
    await Promise.all([
      start('api-1', 'api,worker'),
      start('api-2', 'api,worker'),
      start('api-3', 'api,worker'),
      start('smtp', 'smtp'),
      start('worker', 'worker'),
    ]);
    await until(
      async () => (await Promise.all(instances.map(healthy))).every(Boolean),
      () => `every instance to be ready:\n${instances.map((i) => `${i.name}: ${i.output}`).join('\n')}`,
      200_000,
    );
  }, 240_000);

  afterAll(async () => {
    await Promise.all(
      instances
        .filter((i) => i.child.exitCode === null && i.child.signalCode === null)
        .map((i) => {
          const gone = new Promise((resolve) => i.child.once('exit', resolve));
          i.child.kill('SIGTERM');
          return gone;
        }),
    );
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    await schema?.drop();
  });

  it('stores every acknowledged send and delivers every event; duplicates only for deliveries in flight at the kill', async () => {
    // An organization, two inboxes and a webhook for every event, as an operator's first steps would.
    const config = loadConfig(inboxConfigSpec, {
      INBOX_DATABASE_URL: schema?.url ?? '',
      INBOX_DATABASE_POOL_SIZE: '2',
      INBOX_DOMAINS: 'topology.test',
    });
    const database = await openInboxDatabase(config);
    try {
      await migrateInbox(database);
      const { services } = createInboxServices(config, database.db, { log: { warn: () => {}, error: () => {} } });
      const { key } = await services.apiKeys.createKey({});
      const api = instances.filter((i) => i.name.startsWith('api'));
      const call = async (i: Instance, method: string, url: string, body?: unknown) => {
        const res = await fetch(`http://127.0.0.1:${i.port}${url}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        return { status: res.status, body: (await res.json()) as Record<string, string> };
      };
      const a = (await call(api[1] as Instance, 'POST', '/v0/inboxes', { username: 'alpha' })).body.inbox_id as string;
      const b = (await call(api[2] as Instance, 'POST', '/v0/inboxes', { username: 'beta' })).body.inbox_id as string;
      expect((await call(api[0] as Instance, 'POST', '/v0/webhooks', { url: receiverUrl })).status).toBe(201);

      // Load: API sends round-robin over the three api instances, and SMTP deliveries, until a while after the kill.
      const acknowledged: string[] = [];
      const smtpStored: string[] = [];
      let stop = false;
      let n = 0;
      const sender = async () => {
        while (!stop) {
          const target = api[n++ % api.length] as Instance;
          try {
            const res = await call(target, 'POST', `/v0/inboxes/${encodeURIComponent(a)}/messages/send`, {
              to: [b],
              subject: `load ${n}`,
              text: 'x',
            });
            if (res.status === 200) acknowledged.push(res.body.message_id as string);
          } catch {
            // The killed instance: no answer, so nothing was acknowledged.
          }
        }
      };
      const smtp = instances.find((i) => i.name === 'smtp') as Instance;
      const mailer = async () => {
        for (let m = 0; !stop; m++) {
          const result = await deliver(smtp.smtpPort, {
            from: 'outside@example.org',
            to: [b],
            message: simpleMessage({ to: b, subject: `smtp ${m}` }),
          });
          smtpStored.push(storedMessageId(result.data));
        }
      };
      const load = Promise.all([sender(), sender(), sender(), mailer()]);
      await until(() => acknowledged.length >= 40, 'the first sends', 30_000);

      const victim = api[0] as Instance;
      const exited = new Promise((resolve) => victim.child.once('exit', (_code, signal) => resolve(signal)));
      victim.child.kill('SIGKILL');
      const killedAt = Date.now();
      expect(await exited).toBe('SIGKILL');
      // What was claimed at the kill: the only deliveries that may arrive twice.
      const inFlight = new Set(
        (
          await database.db
            .selectFrom('jobs')
            .select('payload')
            .where('queue', '=', 'webhook.deliver')
            .where('status', '=', 'pending')
            .where('locked_until', 'is not', null)
            .execute()
        ).map((r) => (JSON.parse(r.payload) as { event_id: string }).event_id),
      );
      let takeoverMs = 0;
      const takenOver = until(
        () => [...inFlight].every((id) => received.includes(id)),
        'the deliveries in flight at the kill',
        120_000,
      ).then(() => (takeoverMs = Date.now() - killedAt));
      await until(() => acknowledged.length >= 100, 'more sends after the kill', 30_000);
      stop = true;
      await load;

      // Every acknowledged message is stored.
      const stored = new Set(
        (await database.db.selectFrom('messages').select('message_id').execute()).map((r) => r.message_id),
      );
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      expect(smtpStored.filter((id) => !stored.has(id))).toEqual([]);

      // Every event is delivered, the dead worker's too (its leases run out and another worker takes them).
      const events = (await database.db.selectFrom('events').select('event_id').execute()).map((r) => r.event_id);
      expect(events.length).toBeGreaterThanOrEqual(acknowledged.length + smtpStored.length);
      await until(
        () => events.every((id) => received.includes(id)),
        () => `every event to reach the webhook (${events.filter((id) => !received.includes(id)).length} missing)`,
        90_000,
      );
      await takenOver;
      const allMs = Date.now() - killedAt;
      const counts = new Map<string, number>();
      for (const id of received) counts.set(id, (counts.get(id) ?? 0) + 1);
      const duplicates = [...counts].filter(([, c]) => c > 1).map(([id]) => id);
      expect(duplicates.filter((id) => !inFlight.has(id))).toEqual([]);
      process.stdout.write(
        `topology: ${acknowledged.length} API sends and ${smtpStored.length} SMTP messages acknowledged and stored; ${events.length} events delivered; ${inFlight.size} in flight at the kill, ${duplicates.length} delivered twice; those in flight delivered ${takeoverMs} ms after the kill, all ${allMs} ms after it\n`,
      );
      // The survivors are still healthy, and their logs are JSON.
      for (const i of instances.filter((x) => x !== victim)) {
        expect(await healthy(i)).toBe(true);
        for (const line of i.output.split('\n').filter((l) => l.startsWith('{')))
          expect(() => JSON.parse(line) as unknown).not.toThrow();
      }
    } finally {
      await database.destroy();
    }
  }, 240_000);
});
