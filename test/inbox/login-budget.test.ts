import { afterAll, describe, expect, it } from 'vitest';
import {
  createInboxTestDatabase,
  dialects,
  startInboxServer,
  type InboxTestDatabase,
  type InboxTestServer,
} from '../support/inbox-server.js';
import { RawImap, imapPort } from '../support/imap.js';
import { privateRedis } from '../support/redis-server.js';
import { SmtpTestClient } from '../support/smtp-client.js';
import { unique } from './fixtures.js';

/**
 * Failed logins of the doors without HTTP (IMAP, SMTP submission; platform/login-budget.ts): one
 * budget per user name (INBOX_IMAP_LOGIN_FAILURES in 15 minutes, ten times that per address)
 * counts the guesses of both protocols together, and through Redis those of every instance, so
 * an attacker gains nothing by spreading guesses over protocols or instances.
 */
const DOORS = {
  INBOX_IMAP_PORT: '0',
  INBOX_IMAPS_PORT: '0',
  INBOX_IMAP_ALLOW_PLAINTEXT_LOOPBACK: 'true',
  INBOX_SUBMISSION_PORT: '0',
  INBOX_SUBMISSIONS_PORT: '0',
  INBOX_SUBMISSION_ALLOW_PLAINTEXT_LOOPBACK: 'true',
  INBOX_IMAP_LOGIN_FAILURES: '3',
};

/** The code of an AUTH PLAIN over a fresh submission connection. */
async function submissionLogin(server: InboxTestServer, user: string, key: string): Promise<number> {
  const { client } = await SmtpTestClient.connect(server.service.submission?.port as number);
  try {
    expect((await client.command('EHLO client.example')).code).toBe(250);
    return (await client.command(`AUTH PLAIN ${Buffer.from(`\0${user}\0${key}`).toString('base64')}`)).code;
  } finally {
    client.close();
  }
}

/** The answer of a LOGIN over a fresh IMAP connection: OK, or the NO's response code. */
async function imapLogin(server: InboxTestServer, user: string, key: string): Promise<string> {
  const raw = await RawImap.open(imapPort(server));
  try {
    const answer = await raw.command('l', `LOGIN ${user} ${key}`);
    return /^l OK/m.test(answer) ? 'OK' : (/^l NO \[([A-Z]+)\]/m.exec(answer)?.[1] ?? answer);
  } finally {
    raw.close();
  }
}

describe.each(dialects)('%s: failed logins of IMAP and SMTP submission', (dialect) => {
  const databases: InboxTestDatabase[] = [];
  afterAll(async () => {
    for (const d of databases) await d.drop();
  });

  it('counts both protocols in one budget per user name, in one process', async () => {
    const database = createInboxTestDatabase(dialect);
    databases.push(database);
    const server = await startInboxServer({ database, env: { ...DOORS, INBOX_ROLES: 'api,submission,imap' } });
    try {
      const user = `${unique('guessed')}@inbox.test`;
      expect(await submissionLogin(server, user, 'am_wrong-1')).toBe(535);
      expect(await imapLogin(server, user, 'am_wrong-2')).toBe('AUTHENTICATIONFAILED');
      expect(await submissionLogin(server, user, 'am_wrong-3')).toBe(535);
      // Three failures over two protocols: both now refuse without trying.
      expect(await submissionLogin(server, user, 'am_wrong-4')).toBe(454);
      expect(await imapLogin(server, user, 'am_wrong-5')).toBe('UNAVAILABLE');
      // Another user name is not affected.
      expect(await submissionLogin(server, `${unique('other')}@inbox.test`, 'am_wrong')).toBe(535);
    } finally {
      await server.close();
    }
  });

  it('shares the budget between instances through Redis: failures on one are refused on the other', async () => {
    const redis = await privateRedis();
    const database = createInboxTestDatabase(dialect);
    databases.push(database);
    const env = { ...DOORS, REDIS_URL: redis.url };
    const one = await startInboxServer({ database, env: { ...env, INBOX_ROLES: 'api,submission' } });
    const two = await startInboxServer({ database, env: { ...env, INBOX_ROLES: 'api,imap' } });
    try {
      const user = `${unique('spread')}@inbox.test`;
      expect(await submissionLogin(one, user, 'am_wrong-1')).toBe(535);
      expect(await imapLogin(two, user, 'am_wrong-2')).toBe('AUTHENTICATIONFAILED');
      expect(await submissionLogin(one, user, 'am_wrong-3')).toBe(535);
      expect(await imapLogin(two, user, 'am_wrong-4')).toBe('UNAVAILABLE');
      expect(await submissionLogin(one, user, 'am_wrong-5')).toBe(454);
    } finally {
      await two.close();
      await one.close();
      await redis.stop();
    }
  });
});
