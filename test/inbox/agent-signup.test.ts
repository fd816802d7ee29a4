import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentMailError } from 'agentmail';
import { fixedClock } from '../../src/platform/clock.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { startSmtpRelay, type SmtpRelay } from '../support/smtp-relay.js';
import { call, expectError, parseRaw, unique } from './fixtures.js';

/**
 * Agent sign-up over real sockets: the SDK signs up, the code leaves through the service's own
 * outbound path to a real SMTP relay, and the test reads it there as the human would.
 */

async function sdkError(
  promise: Promise<unknown>,
): Promise<{ statusCode: number | undefined; body: { error: { type: string; details: { code: string } } } }> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(AgentMailError);
    return err as never;
  }
  throw new Error('expected the call to fail');
}

describe.each(dialects)('agent sign-up (%s)', (dialect) => {
  describe('when INBOX_AGENT_SIGNUP is off (the default)', () => {
    let server: InboxTestServer;
    beforeAll(async () => {
      server = await startInboxServer({ dialect });
    });
    afterAll(async () => server?.close());

    it('answers 403 to sign-up and verify, with or without a key', async () => {
      const signUp = await sdkError(
        server.client('am_none').agent.signUp({ humanEmail: 'h@example.org', username: unique('off') }),
      );
      expect(signUp.statusCode).toBe(403);
      expect(signUp.body.error).toMatchObject({ type: 'permission_error', details: { code: 'AGENT_SIGNUP_DISABLED' } });
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/verify', { otp_code: '123456' }),
        403,
        'permission_error',
        'AGENT_SIGNUP_DISABLED',
      );
      const { key } = await server.createKey();
      const verify = await sdkError(server.client(key).agent.verify({ otpCode: '123456' }));
      expect(verify.statusCode).toBe(403);
      expect(verify.body.error.details.code).toBe('AGENT_SIGNUP_DISABLED');
      expectError(
        await call(server.url, key, 'POST', '/v0/agent/human', { human_email: 'h@example.org' }),
        403,
        'permission_error',
        'AGENT_SIGNUP_DISABLED',
      );
    });
  });

  describe('when on', () => {
    let server: InboxTestServer;
    let relay: SmtpRelay;
    const clock = fixedClock(new Date('2026-11-20T10:00:00.000Z'));
    beforeAll(async () => {
      relay = await startSmtpRelay();
      server = await startInboxServer({
        dialect,
        clock,
        env: {
          INBOX_AGENT_SIGNUP: 'true',
          INBOX_SMTP_RELAY_URL: relay.url(),
          INBOX_SMTP_RELAY_TIMEOUT_MS: '5000',
          INBOX_AGENT_SIGNUP_PER_HOUR: '1000',
        },
      });
    });
    afterAll(async () => {
      await server?.close();
      await relay?.stop();
    });

    /** The code in the n-th message the relay took for `human` (as the human reads it). */
    async function codeFor(human: string, n: number): Promise<string> {
      await relay.waitFor(n);
      const mine = relay.received.filter((m) => m.rcptTo.includes(human));
      const parsed = await parseRaw((mine.at(-1) as { raw: Buffer }).raw);
      expect(parsed.from?.value[0]?.address).toBe('no-reply@inbox.test');
      const code = /(\d{6})/.exec(parsed.subject ?? '')?.[1];
      expect(code).toMatch(/^\d{6}$/);
      expect(parsed.text).toContain(code as string);
      return code as string;
    }

    it('signs an agent up with one limited inbox; the code mailed to the human lifts the limits', async () => {
      const human = `${unique('human')}@example.org`;
      const username = unique('agent');
      const before = relay.received.length;
      const result = await server.client('am_unused').agent.signUp({ humanEmail: human, username });
      expect(result).toEqual({
        organizationId: expect.stringMatching(/^org_/),
        inboxId: `${username}@inbox.test`,
        apiKey: expect.stringMatching(/^am_/),
      });
      const code = await codeFor(human, before + 1);
      // Stored hashed, never as the code itself.
      const row = await server.service.runtime.services.db
        .selectFrom('agent_signups')
        .selectAll()
        .where('organization_id', '=', result.organizationId)
        .executeTakeFirstOrThrow();
      expect(row.code_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row.code_hash).not.toContain(code);

      const agent = server.client(result.apiKey);
      expect(await agent.auth.me()).toEqual({
        scopeType: 'organization',
        scopeId: result.organizationId,
        organizationId: result.organizationId,
        apiKeyId: expect.stringMatching(/^key_/),
      });
      expect(await agent.organizations.get()).toEqual({
        organizationId: result.organizationId,
        inboxCount: 1,
        domainCount: 0,
        inboxLimit: 1,
        createdAt: expect.any(Date),
        updatedAt: expect.any(Date),
      });
      // Limited: no second inbox, no keys, mail only to the human.
      expectError(
        await call(server.url, result.apiKey, 'POST', '/v0/inboxes', { username: unique('second') }),
        403,
        'permission_error',
        'ORGANIZATION_NOT_VERIFIED',
      );
      expectError(
        await call(server.url, result.apiKey, 'POST', '/v0/api-keys', { name: 'more' }),
        403,
        'permission_error',
        'ORGANIZATION_NOT_VERIFIED',
      );
      expectError(
        await call(server.url, result.apiKey, 'POST', `/v0/inboxes/${result.inboxId}/messages/send`, {
          to: 'someone@example.net',
          subject: 's',
          text: 't',
        }),
        403,
        'permission_error',
        'MESSAGE_REJECTED',
        'to',
      );
      await agent.inboxes.messages.send(result.inboxId, { to: human, subject: 'hello human', text: 'hi' });
      await relay.waitFor(before + 2);

      // A wrong code counts; the right one verifies.
      const wrong = await call(server.url, result.apiKey, 'POST', '/v0/agent/verify', {
        otp_code: code === '000000' ? '111111' : '000000',
      });
      expectError(wrong, 400, 'validation_error', 'INVALID_OTP_CODE', 'otp_code');
      expect(wrong.body.error.details.remaining_attempts).toBe(9);
      expectError(
        await call(server.url, result.apiKey, 'POST', '/v0/agent/verify', { otp_code: '12ab' }),
        400,
        'validation_error',
        'INVALID_OTP_CODE',
        'otp_code',
      );
      expect(await agent.agent.verify({ otpCode: code })).toEqual({ verified: true });
      expect(await agent.agent.verify({ otpCode: code })).toEqual({ verified: true });

      // Lifted: a second inbox, mail to anyone, keys.
      await agent.inboxes.create({ username: unique('second') });
      await agent.inboxes.messages.send(result.inboxId, { to: 'someone@example.net', subject: 's', text: 't' });
      await agent.apiKeys.create({ name: 'more' });
      expect((await agent.organizations.get()).inboxLimit).toBeUndefined();
      // The username is taken now, for everyone.
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/sign-up', { human_email: human, username }),
        409,
        'conflict',
        'ADDRESS_TAKEN',
      );
    });

    it('limits the attempts, expires codes, and a new sign-up with the same human rotates the key', async () => {
      const human = `${unique('human')}@example.org`;
      const username = unique('agent');
      const first = await server.client('am_unused').agent.signUp({ humanEmail: human, username });
      const code = await codeFor(human, relay.received.length + 1);
      const wrongCode = code === '999999' ? '888888' : '999999';
      for (let i = 0; i < 10; i += 1)
        expect((await call(server.url, first.apiKey, 'POST', '/v0/agent/verify', { otp_code: wrongCode })).status).toBe(
          400,
        );
      // Even the right code is refused now.
      expectError(
        await call(server.url, first.apiKey, 'POST', '/v0/agent/verify', { otp_code: code }),
        403,
        'permission_error',
        'OTP_ATTEMPTS_EXHAUSTED',
      );

      // A day later the code has expired; signing up again (same human, same username) gives a new key and code.
      clock.advance(24 * 3600e3 + 1);
      expectError(
        await call(server.url, first.apiKey, 'POST', '/v0/agent/verify', { otp_code: code }),
        403,
        'permission_error',
        'OTP_EXPIRED',
      );
      const count = relay.received.length;
      const again = await server.client('am_unused').agent.signUp({ humanEmail: human, username });
      expect(again.organizationId).toBe(first.organizationId);
      expect(again.apiKey).not.toBe(first.apiKey);
      expectError(
        await call(server.url, first.apiKey, 'GET', '/v0/auth/me'),
        401,
        'authentication_error',
        'INVALID_API_KEY',
      );
      const second = await codeFor(human, count + 1);
      expect(await server.client(again.apiKey).agent.verify({ otpCode: second })).toEqual({ verified: true });
      // Another human cannot take the username over.
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/sign-up', { human_email: 'other@example.org', username }),
        409,
        'conflict',
        'ADDRESS_TAKEN',
      );
    });

    it('signs up without a human (receives, sends to nobody), attaches one later, replaces it twice at most (attachHuman)', async () => {
      const username = unique('solo');
      const sent = relay.received.length;
      const signUp = await call(server.url, undefined, 'POST', '/v0/agent/sign-up', { username });
      expect(signUp.status).toBe(200);
      const { api_key: key, inbox_id: inbox } = signUp.body as { api_key: string; inbox_id: string };
      const send = (to: string) =>
        call(server.url, key, 'POST', `/v0/inboxes/${inbox}/messages/send`, { to, subject: 's', text: 't' });
      const attach = (humanEmail: string, withKey = key) =>
        call(server.url, withKey, 'POST', '/v0/agent/human', { human_email: humanEmail });
      expectError(await send('anyone@example.net'), 403, 'permission_error', 'MESSAGE_REJECTED');
      expectError(
        await call(server.url, key, 'POST', '/v0/agent/verify', { otp_code: '123456' }),
        403,
        'permission_error',
        'NO_HUMAN_ATTACHED',
      );
      // Nothing proves a second sign-up without a human is the same agent: the username stays taken.
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/sign-up', { username }),
        409,
        'conflict',
        'ADDRESS_TAKEN',
      );
      expect(relay.received.length).toBe(sent);

      const first = `${unique('first')}@example.org`;
      const attached = await attach(first);
      expect(attached.status).toBe(200);
      expect(attached.body).toEqual({ human_email: first, instructions: expect.stringContaining('/v0/agent/verify') });
      const firstCode = await codeFor(first, sent + 1);
      expect((await send(first)).status).toBe(200);
      expectError(await send('anyone@example.net'), 403, 'permission_error', 'MESSAGE_REJECTED');
      // The same human while the code is valid: the code (and its attempts) stay, nothing is mailed.
      const again = await attach(first.toUpperCase());
      expect(again.body.instructions).toContain('still valid');
      await relay.waitFor(sent + 2);
      expect(relay.received.length).toBe(sent + 2);

      // Replaced: the new human gets a new code, the old code stops working.
      const second = `${unique('second')}@example.org`;
      expect((await attach(second)).status).toBe(200);
      const secondCode = await codeFor(second, sent + 3);
      expectError(await send(first), 403, 'permission_error', 'MESSAGE_REJECTED');
      if (firstCode !== secondCode)
        expectError(
          await call(server.url, key, 'POST', '/v0/agent/verify', { otp_code: firstCode }),
          400,
          'validation_error',
          'INVALID_OTP_CODE',
          'otp_code',
        );
      // An expired code is issued again for the same human.
      clock.advance(25 * 3600e3);
      expect((await attach(second)).status).toBe(200);
      const renewed = await codeFor(second, sent + 4);
      const third = `${unique('third')}@example.org`;
      expect((await attach(third)).status).toBe(200);
      await relay.waitFor(sent + 5);
      expectError(
        await attach(`${unique('fourth')}@example.org`),
        403,
        'permission_error',
        'HUMAN_CHANGES_EXHAUSTED',
        'human_email',
      );
      expectError(await attach('not an address'), 400, 'validation_error', 'INVALID_EMAIL', 'human_email');
      expectError(await attach(inbox), 400, 'validation_error', 'INVALID_EMAIL', 'human_email');
      expectError(
        await call(server.url, key, 'POST', '/v0/agent/human', {}),
        400,
        'validation_error',
        'REQUIRED',
        'human_email',
      );
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/human', { human_email: third }),
        401,
        'authentication_error',
        'MISSING_API_KEY',
      );
      const { key: plain } = await server.createKey();
      expectError(await attach(third, plain), 403, 'permission_error', 'NOT_AGENT_ORGANIZATION');

      // The third human's code verifies; after that the human is fixed.
      const thirdCode = await codeFor(third, sent + 5);
      expect(renewed).toMatch(/^\d{6}$/);
      expect((await call(server.url, key, 'POST', '/v0/agent/verify', { otp_code: thirdCode })).body).toEqual({
        verified: true,
      });
      expectError(await attach(third), 403, 'permission_error', 'ORGANIZATION_ALREADY_VERIFIED');
      expect((await send('anyone@example.net')).status).toBe(200);
    });

    it('refuses bad input in the spec error format, and verify of an organization that never signed up', async () => {
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/sign-up', {
          human_email: 'not an address',
          username: unique('a'),
        }),
        400,
        'validation_error',
        'INVALID_EMAIL',
        'human_email',
      );
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/sign-up', {
          human_email: 'h@example.org',
          username: '.bad.',
        }),
        400,
        'validation_error',
        'INVALID_USERNAME',
        'username',
      );
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/sign-up', { human_email: 'h@example.org' }),
        400,
        'validation_error',
        'REQUIRED',
        'username',
      );
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/verify', { otp_code: '123456' }),
        401,
        'authentication_error',
        'MISSING_API_KEY',
      );
      const { key } = await server.createKey();
      expectError(
        await call(server.url, key, 'POST', '/v0/agent/verify', { otp_code: '123456' }),
        403,
        'permission_error',
        'NOT_AGENT_ORGANIZATION',
      );
      // The service's sender inbox belongs to no key.
      expectError(
        await call(server.url, key, 'GET', '/v0/inboxes/no-reply@inbox.test'),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
    });
  });

  it('limits sign-ups per client address', async () => {
    const server = await startInboxServer({
      dialect,
      env: { INBOX_AGENT_SIGNUP: 'true', INBOX_AGENT_SIGNUP_PER_HOUR: '1' },
    });
    try {
      // The first is let through (and fails on the missing relay: nothing is kept), the second is over the limit.
      const first = await call(server.url, undefined, 'POST', '/v0/agent/sign-up', {
        human_email: 'h@example.org',
        username: unique('r'),
      });
      expect(first.status).toBe(400);
      const username = unique('r');
      expectError(
        await call(server.url, undefined, 'POST', '/v0/agent/sign-up', { human_email: 'h@example.org', username }),
        429,
        'rate_limit_exceeded',
        'RATE_LIMIT_EXCEEDED',
      );
      expect(
        await server.service.runtime.services.db
          .selectFrom('inboxes')
          .select('inbox_id')
          .where('inbox_id', '=', `${username}@inbox.test`)
          .executeTakeFirst(),
      ).toBeUndefined();
      expect(await server.service.runtime.services.db.selectFrom('agent_signups').selectAll().execute()).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
