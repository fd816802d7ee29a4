import os from 'node:os';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { ConfigError } from '../../platform/config/config.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import type { Ids } from '../../platform/ids.js';
import type { InboxConfig } from '../inbox.config.js';
import type { InboxDatabase } from '../schema/database.js';
import { findServiceSecret, insertServiceSecretIfAbsent } from '../mailstore/message.repository.js';
import { createDnsResolver } from '../smtp/auth-results.js';
import { createKeySealer } from './domain-keys.js';
import { createDomainService, type DomainService } from './domain.service.js';

/** The longest a verification waits for DNS; each query gets a share of it (createDnsResolver). */
const VERIFY_TIMEOUT_MS = 10_000;
const KEY_SECRET_NAME = 'domain_dkim_key_encryption';

/** The domain service from the settings: resolver, MX host, SPF includes, key encryption. */
export function createDomains(
  config: InboxConfig,
  deps: { db: Kysely<InboxDatabase>; commits: GroupCommit<InboxDatabase>; clock: Clock; ids: Ids },
): DomainService {
  const secret = config.domainKeySecret;
  if (secret !== undefined && secret.length < 32)
    throw new ConfigError([
      `INBOX_DOMAIN_KEY_SECRET must be at least 32 characters (it is ${secret.length}; value not shown)`,
    ]);
  const storedSecret = async (): Promise<string> => {
    await insertServiceSecretIfAbsent(deps.db, KEY_SECRET_NAME, deps.ids.token(32));
    const value = await findServiceSecret(deps.db, KEY_SECRET_NAME);
    if (value === undefined) throw new Error('the domain key encryption secret could not be stored');
    return value;
  };
  const servers = config.dnsServers.length ? config.dnsServers : config.smtpDnsServers;
  const resolver = createDnsResolver(servers, VERIFY_TIMEOUT_MS / 2);
  return createDomainService({
    ...deps,
    configuredDomains: config.domains,
    mxHost: config.smtpHostname ?? os.hostname(),
    spfIncludes: config.domainSpfIncludes,
    lookup: (name, rrtype) => resolver(name, rrtype),
    verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    sealer: createKeySealer(secret, storedSecret),
  });
}
