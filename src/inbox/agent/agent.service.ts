import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { isUniqueViolation } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { AppError, ForbiddenError, ValidationError } from '../../platform/errors/app-error.js';
import { hashSecret, newSecret, safeEqual, type Ids } from '../../platform/ids.js';
import {
  deleteOrganizationKeys,
  findAgentSignup,
  findAgentSignupByInbox,
  insertAgentSignup,
  insertApiKey,
  insertOrganization,
  organizationExists,
  updateAgentSignup,
} from '../api-keys/api-key.repository.js';
import { insertPod } from '../pods/pod.repository.js';
import { type KeyOwner, API_KEY_PREFIX } from '../core/scope.js';
import type { InboxDatabase } from '../schema/database.js';
import { InboxAddressTakenError } from '../inboxes/inbox.errors.js';
import { findInboxByAddress, insertInbox } from '../inboxes/inbox.repository.js';
import { checkUsername } from '../inboxes/username.js';
import { isValidAddress } from '../mail/compose.js';
import type { SendService } from '../outgoing/send.service.js';

/** How long a code is good for, and how many wrong codes an organization may enter meanwhile. */
export const CODE_TTL_MS = 24 * 3600e3;
export const MAX_CODE_ATTEMPTS = 10;
/** How often an agent organization may replace the human it attached (AgentMail's limit). */
export const MAX_HUMAN_CHANGES = 2;
/** The organization that owns the inbox the codes are mailed from (no key ever reaches it). */
export const SYSTEM_ORGANIZATION_ID = 'org_system';

export class AgentSignupDisabledError extends ForbiddenError {
  constructor() {
    super('Agent sign-up is disabled on this service (INBOX_AGENT_SIGNUP=false).', {
      code: 'AGENT_SIGNUP_DISABLED',
      details: { code: 'AGENT_SIGNUP_DISABLED' },
    });
  }
}

export interface AgentServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly enabled: boolean;
  /** The first local domain: agent inboxes and the sender live there. */
  readonly domain: string;
  readonly senderUsername: string;
  /** Counts sign-up requests per client address (a RateLimiter with an hourly window). */
  readonly limiter: { hit(key: string): Promise<{ allowed: boolean; resetSeconds: number }> };
  readonly outgoing: Pick<SendService, 'send'>;
}

/** The code's hash: salted with the organization, so equal codes of two organizations differ. */
const codeHash = (organizationId: string, code: string) => hashSecret(`${organizationId}:${code}`);
const newCode = () => String(randomInt(0, 1_000_000)).padStart(6, '0');

/**
 * Agent sign-up (decision 0018): an agent creates an organization with one inbox and an
 * organization key that is limited (core/scope.ts UNVERIFIED_DENIED; mail only to the human)
 * until the human it names enters the 6-digit code mailed to them. Codes are stored as hashes,
 * expire after 24 h and allow 10 wrong entries. An agent may sign up without a human (its inbox
 * then receives but sends to nobody) and attach one later (POST /v0/agent/human, decision 0043).
 */
export function createAgentService(deps: AgentServiceDeps) {
  const { db, commits, clock, ids } = deps;
  const systemOwner: KeyOwner = { apiKeyId: 'system', organizationId: SYSTEM_ORGANIZATION_ID };
  const senderAddress = `${deps.senderUsername}@${deps.domain}`;

  function requireEnabled(): void {
    if (!deps.enabled) throw new AgentSignupDisabledError();
  }

  /** The service's own organization and inbox, made on first use. */
  async function ensureSender(): Promise<void> {
    const existing = await findInboxByAddress(db, senderAddress);
    if (existing) {
      if (existing.organizationId !== SYSTEM_ORGANIZATION_ID)
        throw new AppError(
          'unavailable',
          `The sign-up sender ${senderAddress} belongs to an organization; set INBOX_AGENT_SIGNUP_SENDER to a free username.`,
          { code: 'SIGNUP_SENDER_TAKEN' },
        );
      return;
    }
    const now = clock.now().toISOString();
    try {
      await commits.run(async (trx) => {
        let podId = ids.uuid();
        if (!(await organizationExists(trx, SYSTEM_ORGANIZATION_ID))) {
          await insertOrganization(trx, { id: SYSTEM_ORGANIZATION_ID, name: 'system', createdAt: now });
          await insertPod(trx, { id: podId, organizationId: SYSTEM_ORGANIZATION_ID, name: 'system', createdAt: now });
        } else {
          podId = (
            await trx
              .selectFrom('pods')
              .select('id')
              .where('organization_id', '=', SYSTEM_ORGANIZATION_ID)
              .executeTakeFirstOrThrow()
          ).id;
        }
        await insertInbox(trx, {
          inboxId: senderAddress,
          organizationId: SYSTEM_ORGANIZATION_ID,
          podId,
          username: deps.senderUsername,
          domain: deps.domain,
          displayName: 'Sign-up',
          clientId: null,
          status: 'active',
          createdAt: now,
          updatedAt: now,
        });
      });
    } catch (err) {
      // Another instance made it first.
      if (!isUniqueViolation(err)) throw err;
    }
  }

  /** A human's address as sign-up and attachHuman take it: lower-cased, valid, not the agent's inbox. */
  function humanAddress(raw: string, inboxId: string | undefined): string {
    const humanEmail = raw.trim().toLowerCase();
    if (!isValidAddress(humanEmail))
      throw new ValidationError('human_email must be an email address.', 'human_email', 'INVALID_EMAIL');
    if (humanEmail === inboxId)
      throw new ValidationError(
        'human_email must be the address of a human, not of the new inbox.',
        'human_email',
        'INVALID_EMAIL',
      );
    return humanEmail;
  }

  async function mailCode(humanEmail: string, inboxId: string, code: string): Promise<void> {
    await deps.outgoing.send(systemOwner, senderAddress, {
      to: [humanEmail],
      subject: `Your verification code: ${code}`,
      text: `An agent signed up for the inbox ${inboxId} and named you as its human.\n\nIf that is right, give it this code (valid for 24 hours): ${code}\n\nIf not, ignore this message: the agent can only write to you.\n`,
    });
  }

  return {
    /** POST /v0/agent/sign-up. Again with the same human: a new key (the old stops working) and a new code. */
    async signUp(
      input: { humanEmail?: string; username: string },
      client: string,
    ): Promise<{ organizationId: string; inboxId: string; apiKey: string }> {
      requireEnabled();
      const rate = await deps.limiter.hit(`agent-signup:${client}`);
      if (!rate.allowed)
        throw new AppError('rate_limited', `Too many sign-ups from this address; retry in ${rate.resetSeconds} s.`, {
          code: 'RATE_LIMIT_EXCEEDED',
          details: { code: 'RATE_LIMIT_EXCEEDED', retry_after_seconds: rate.resetSeconds },
        });
      const username = checkUsername(input.username);
      const inboxId = `${username}@${deps.domain}`;
      // Without a human: an inbox that receives, sends to nobody, and has no code until one is attached.
      const humanEmail = input.humanEmail === undefined ? '' : humanAddress(input.humanEmail, inboxId);
      if (humanEmail) await ensureSender();

      const apiKey = newSecret(ids, API_KEY_PREFIX, 32);
      const code = newCode();
      const now = clock.now();
      const at = now.toISOString();
      const expires = new Date(now.getTime() + CODE_TTL_MS).toISOString();

      const previous = await findAgentSignupByInbox(db, inboxId);
      if (previous) {
        // Without a human nothing proves it is the same agent again: the username stays taken.
        if (!humanEmail || previous.humanEmail !== humanEmail || previous.verifiedAt !== null)
          throw new InboxAddressTakenError(inboxId);
        // The same agent again: rotate the key; a new code (attempts carry over until the old code's expiry).
        const expired = previous.codeExpiresAt <= at;
        await commits.run(async (trx) => {
          await deleteOrganizationKeys(trx, previous.organizationId);
          await insertApiKey(trx, {
            id: `key_${ids.uuid().replace(/-/g, '')}`,
            organizationId: previous.organizationId,
            name: 'agent',
            keyHash: hashSecret(apiKey),
            keyPrefix: apiKey.slice(0, 8),
            createdAt: at,
          });
          await updateAgentSignup(trx, previous.organizationId, {
            codeHash: codeHash(previous.organizationId, code),
            ...(expired ? { codeExpiresAt: expires, attempts: 0 } : {}),
          });
        });
        await mailCode(humanEmail, inboxId, code);
        return { organizationId: previous.organizationId, inboxId, apiKey };
      }

      const organizationId = `org_${ids.uuid().replace(/-/g, '')}`;
      const podId = ids.uuid();
      try {
        await commits.run(async (trx) => {
          await insertOrganization(trx, { id: organizationId, name: username, createdAt: at });
          await insertPod(trx, { id: podId, organizationId, name: 'default', createdAt: at });
          await insertInbox(trx, {
            inboxId,
            organizationId,
            podId,
            username,
            domain: deps.domain,
            displayName: null,
            clientId: null,
            status: 'active',
            createdAt: at,
            updatedAt: at,
          });
          await insertApiKey(trx, {
            id: `key_${ids.uuid().replace(/-/g, '')}`,
            organizationId,
            name: 'agent',
            keyHash: hashSecret(apiKey),
            keyPrefix: apiKey.slice(0, 8),
            createdAt: at,
          });
          await insertAgentSignup(trx, {
            organizationId,
            humanEmail,
            inboxId,
            codeHash: codeHash(organizationId, code),
            // No human, no code: expired from the start.
            codeExpiresAt: humanEmail ? expires : at,
            attempts: 0,
            verifiedAt: null,
            createdAt: at,
          });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw new InboxAddressTakenError(inboxId);
        throw err;
      }
      if (!humanEmail) return { organizationId, inboxId, apiKey };
      try {
        await mailCode(humanEmail, inboxId, code);
      } catch (err) {
        // No code reached anyone: the organization is of no use, and its username is freed.
        await commits.run((trx) => trx.deleteFrom('organizations').where('id', '=', organizationId).execute());
        throw err;
      }
      return { organizationId, inboxId, apiKey };
    },

    /**
     * POST /v0/agent/human with the organization's key, until it is verified: attaches the human
     * (or replaces it, at most MAX_HUMAN_CHANGES times) and mails it a code; the key then mails
     * that human only. The same human again keeps a code that is still valid (its attempts too)
     * and issues a new one when it expired; the key is never rotated.
     */
    async attachHuman(owner: KeyOwner, rawHumanEmail: string): Promise<{ humanEmail: string; instructions: string }> {
      requireEnabled();
      const humanEmail = humanAddress(rawHumanEmail, undefined);
      const now = clock.now();
      const at = now.toISOString();
      const code = newCode();
      const expires = new Date(now.getTime() + CODE_TTL_MS).toISOString();
      const outcome = await commits.run(async (trx) => {
        const signup = await findAgentSignup(trx, owner.organizationId, { lock: true });
        if (!signup) return { kind: 'not_agent' as const };
        if (signup.verifiedAt !== null) return { kind: 'verified' as const };
        if (humanEmail === signup.inboxId) return { kind: 'own_inbox' as const };
        const same = signup.humanEmail === humanEmail;
        if (same && signup.codeExpiresAt > at)
          return { kind: 'kept' as const, signup, left: MAX_CODE_ATTEMPTS - signup.attempts };
        const changes = signup.humanChanges ?? 0;
        const replacing = !same && signup.humanEmail !== '';
        if (replacing && changes >= MAX_HUMAN_CHANGES) return { kind: 'exhausted' as const };
        await updateAgentSignup(trx, owner.organizationId, {
          humanEmail,
          codeHash: codeHash(owner.organizationId, code),
          codeExpiresAt: expires,
          attempts: 0,
          ...(replacing ? { humanChanges: changes + 1 } : {}),
        });
        return { kind: 'issued' as const, signup };
      });
      if (outcome.kind === 'not_agent') throw new NotAgentOrganizationError('attach a human to');
      if (outcome.kind === 'verified')
        throw new ForbiddenError('This organization is verified already: its human cannot be changed any more.', {
          code: 'ORGANIZATION_ALREADY_VERIFIED',
          details: { code: 'ORGANIZATION_ALREADY_VERIFIED' },
        });
      if (outcome.kind === 'exhausted')
        throw new ForbiddenError(`The human was replaced ${MAX_HUMAN_CHANGES} times already; it cannot be again.`, {
          code: 'HUMAN_CHANGES_EXHAUSTED',
          details: { field: 'human_email', code: 'HUMAN_CHANGES_EXHAUSTED' },
        });
      if (outcome.kind === 'own_inbox')
        throw new ValidationError(
          "human_email must be the address of a human, not of the agent's inbox.",
          'human_email',
          'INVALID_EMAIL',
        );
      const { signup } = outcome;
      if (outcome.kind === 'kept')
        return {
          humanEmail,
          instructions: `The 6-digit code mailed to ${humanEmail} is still valid until ${signup.codeExpiresAt} (${outcome.left} attempt(s) left): ask your human for it and send it to POST /v0/agent/verify as otp_code. Until then this organization can send mail to ${humanEmail} only.`,
        };
      try {
        await ensureSender();
        await mailCode(humanEmail, signup.inboxId, code);
      } catch (err) {
        // Never delivered: expire it, so that the next call issues a new one.
        await commits.run((trx) => updateAgentSignup(trx, owner.organizationId, { codeExpiresAt: at }));
        throw err;
      }
      return {
        humanEmail,
        instructions: `A 6-digit code was mailed to ${humanEmail}; it is valid for 24 hours and ${MAX_CODE_ATTEMPTS} attempts. Ask your human for it and send it to POST /v0/agent/verify as otp_code. Until then this organization can send mail to ${humanEmail} only.`,
      };
    },

    /** POST /v0/agent/verify with the organization's key: the right code lifts the limits. */
    async verify(owner: KeyOwner, otpCode: string): Promise<{ verified: boolean }> {
      requireEnabled();
      const code = otpCode.trim();
      if (!/^\d{6}$/.test(code))
        throw new ValidationError('otp_code must be the 6 digits mailed to the human.', 'otp_code', 'INVALID_OTP_CODE');
      const now = clock.now().toISOString();
      const outcome = await commits.run(async (trx) => {
        const signup = await findAgentSignup(trx, owner.organizationId, { lock: true });
        if (!signup) return 'not_agent' as const;
        if (signup.verifiedAt !== null) return 'verified' as const;
        if (!signup.humanEmail) return 'no_human' as const;
        if (signup.codeExpiresAt <= now) return 'expired' as const;
        if (signup.attempts >= MAX_CODE_ATTEMPTS) return 'exhausted' as const;
        if (safeEqual(signup.codeHash, codeHash(owner.organizationId, code))) {
          await updateAgentSignup(trx, owner.organizationId, { verifiedAt: now });
          return 'verified' as const;
        }
        await updateAgentSignup(trx, owner.organizationId, { attempts: signup.attempts + 1 });
        return { wrong: MAX_CODE_ATTEMPTS - signup.attempts - 1 };
      });
      if (outcome === 'verified') return { verified: true };
      if (outcome === 'not_agent') throw new NotAgentOrganizationError('verify');
      if (outcome === 'no_human')
        throw new ForbiddenError('No human is attached yet, so no code was sent: POST /v0/agent/human first.', {
          code: 'NO_HUMAN_ATTACHED',
          details: { code: 'NO_HUMAN_ATTACHED' },
        });
      if (outcome === 'expired')
        throw new ForbiddenError(
          'The code expired: POST /v0/agent/human with the same human_email (or sign up again with it) for a new one.',
          { code: 'OTP_EXPIRED', details: { code: 'OTP_EXPIRED' } },
        );
      if (outcome === 'exhausted')
        throw new ForbiddenError(
          `All ${MAX_CODE_ATTEMPTS} attempts are used: wait until the code expires, then sign up again for a new one.`,
          { code: 'OTP_ATTEMPTS_EXHAUSTED', details: { code: 'OTP_ATTEMPTS_EXHAUSTED' } },
        );
      throw new AppError('validation', `Wrong code; ${outcome.wrong} attempt(s) left.`, {
        code: 'INVALID_OTP_CODE',
        details: { field: 'otp_code', code: 'INVALID_OTP_CODE', remaining_attempts: outcome.wrong },
      });
    },
  };
}

export type AgentService = ReturnType<typeof createAgentService>;

class NotAgentOrganizationError extends ForbiddenError {
  constructor(what: string) {
    super(`This organization was not created by an agent sign-up: there is nothing to ${what}.`, {
      code: 'NOT_AGENT_ORGANIZATION',
      details: { code: 'NOT_AGENT_ORGANIZATION' },
    });
  }
}
