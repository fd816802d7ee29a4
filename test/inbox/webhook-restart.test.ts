import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { isLocalhostName, isPublicAddress } from '../../src/platform/net/egress.js';
import { createInboxTestDatabase, dialects, startInboxServer } from '../support/inbox-server.js';
import { createHook, deliveryLog, emit, jobStates, newTenant } from '../support/inbox-webhooks.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

/** Deliveries are rows in the database: they outlive the process that scheduled them. */
describe.each(dialects)('%s: webhook deliveries across a restart', (dialect) => {
  it('pending deliveries survive a restart and reach each webhook exactly once', async () => {
    const database = createInboxTestDatabase(dialect);
    const clock = fixedClock(new Date());
    const receiver = await startWebhookReceiver({ now: () => clock.now().getTime() });
    try {
      const first = await startInboxServer({ database, clock, env: { INBOX_ROLES: 'api' } });
      const tenant = await newTenant(first);
      const all = await createHook(first, receiver, tenant, '/all');
      const received = await createHook(first, receiver, tenant, '/received', { event_types: ['message.received'] });
      await receiver.stop();
      const events = [
        await emit(first, tenant, 'message.received'),
        await emit(first, tenant, 'message.sent'),
        await emit(first, tenant, 'message.received'),
      ];
      expect(await first.service.runtime.runner.drain()).toBe(5);
      expect(receiver.received).toHaveLength(0);
      await first.close();

      // A new process on the same database, with its background worker, after the first retry is due.
      await receiver.start();
      clock.advance(6_000);
      const second = await startInboxServer({ database, clock });
      try {
        await receiver.waitFor(5, 10_000);
        await second.service.runtime.runner.drain();
      } finally {
        await second.close();
      }

      const ids = (path: string) =>
        receiver.received.filter((r) => r.path === path).map((r) => r.headers['svix-id'] as string);
      expect(ids('/all').sort()).toEqual([...events].sort());
      expect(ids('/received').sort()).toEqual([events[0], events[2]].sort());
      expect(receiver.received.every((r) => r.status === 200 && r.svix === true && r.standard === true)).toBe(true);

      // A third start finds nothing left to send, however late it is.
      clock.advance(7 * 86_400_000);
      const third = await startInboxServer({ database, clock, env: { INBOX_ROLES: 'api' } });
      try {
        expect(await third.service.runtime.runner.drain()).toBe(0);
        expect(await jobStates(third, all.webhook_id)).toEqual(['done', 'done', 'done']);
        expect(await jobStates(third, received.webhook_id)).toEqual(['done', 'done']);
        const log = await deliveryLog(third, tenant.key, received.webhook_id);
        const attempts = (log.body.deliveries as Record<string, unknown>[])
          .map((d) => [d.attempt, d.event_id, d.outcome, d.status_code ?? null])
          .sort((x, y) => String(x).localeCompare(String(y)));
        const [e0, e2] = [events[0], events[2]].sort();
        expect(attempts).toEqual([
          [1, e0, 'retrying', null],
          [1, e2, 'retrying', null],
          [2, e0, 'delivered', 200],
          [2, e2, 'delivered', 200],
        ]);
        expect(log.body.deliveries.at(-1).error).toMatch(/ECONNREFUSED/);
      } finally {
        await third.close();
      }
      expect(receiver.received).toHaveLength(5);
    } finally {
      await receiver.stop();
      await database.drop();
    }
  });

  it('a loopback URL stored while private targets were allowed is refused at delivery once they are not', async () => {
    const database = createInboxTestDatabase(dialect);
    const clock = fixedClock(new Date());
    const receiver = await startWebhookReceiver({ now: () => clock.now().getTime() });
    try {
      const first = await startInboxServer({ database, clock, env: { INBOX_ROLES: 'api' } });
      const tenant = await newTenant(first);
      const hook = await createHook(first, receiver, tenant, '/private');
      await first.close();

      const second = await startInboxServer({
        database,
        clock,
        env: { INBOX_ROLES: 'api', INBOX_WEBHOOK_ALLOW_PRIVATE: 'false' },
      });
      try {
        await emit(second, tenant);
        await second.service.runtime.runner.drain();
        clock.advance(86_400_000);
        await second.service.runtime.runner.drain();
        expect(receiver.received).toHaveLength(0);
        const [entry, ...rest] = (await deliveryLog(second, tenant.key, hook.webhook_id)).body.deliveries;
        expect(rest).toHaveLength(0);
        expect(entry).toMatchObject({
          attempt: 1,
          outcome: 'failed',
          error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a private/),
        });
        expect(await jobStates(second, hook.webhook_id)).toEqual(['dead']);
      } finally {
        await second.close();
      }
    } finally {
      await receiver.stop();
      await database.drop();
    }
  });
});

describe.each(dialects)('%s: webhook egress checks at delivery time', (dialect) => {
  it('a host name that resolves to a private address is refused when delivering (and delivered when allowed)', async (context) => {
    // The machine's own name passes the create-time check (it is not an IP literal or localhost)
    // but resolves to a loopback or private address, as a rebinding name would.
    const name = hostname();
    const addresses = await lookup(name, { all: true }).catch(() => []);
    if (isLocalhostName(name) || !addresses.length || addresses.some((a) => isPublicAddress(a.address))) context.skip();

    const clock = fixedClock(new Date());
    // Listening on every interface: if the check were missing, the request would arrive.
    const receiver = await startWebhookReceiver({
      now: () => clock.now().getTime(),
      host: addresses[0]?.family === 6 ? '::' : '0.0.0.0',
    });
    const strict = await startInboxServer({
      dialect,
      clock,
      env: { INBOX_ROLES: 'api', INBOX_WEBHOOK_ALLOW_PRIVATE: 'false' },
    });
    const lax = await startInboxServer({ dialect, clock, env: { INBOX_ROLES: 'api' } });
    try {
      const url = `http://${name}:${receiver.port}/named`;
      for (const server of [strict, lax]) {
        const tenant = await newTenant(server);
        const res = await fetch(`${server.url}/v0/webhooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url }),
        });
        expect(res.status).toBe(201);
        const hook = (await res.json()) as { webhook_id: string; secret: string };
        receiver.trust('/named', hook.secret);
        await emit(server, tenant);
        await server.service.runtime.runner.drain();
        const [entry] = (await deliveryLog(server, tenant.key, hook.webhook_id)).body.deliveries;
        if (server === strict) {
          expect(receiver.received).toHaveLength(0);
          expect(entry).toMatchObject({
            outcome: 'failed',
            error: expect.stringContaining(`refused: ${name} resolves to a private`),
          });
          expect(await jobStates(server, hook.webhook_id)).toEqual(['dead']);
        } else {
          expect(receiver.received).toHaveLength(1);
          expect(entry).toMatchObject({ outcome: 'delivered', status_code: 200 });
        }
      }
    } finally {
      await strict.close();
      await lax.close();
      await receiver.stop();
    }
  });
});
