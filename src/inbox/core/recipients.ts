import { domainOf, localDomainSet } from '../mail/domains.js';

/**
 * The one rule from an address to the inbox it names here, for sends (outgoing/send.service.ts)
 * and inbound SMTP (smtp/inbound.service.ts) alike: an address on a local domain names the inbox
 * of its local part (lower case) on that domain as configured; one on a verified custom domain this
 * service serves (`servedDomain`, domains/) names the inbox on the domain's ASCII spelling; any
 * other address names no inbox here (it is the relay's). No I/O of its own: the custom-domain
 * lookup is handed in.
 */
export function recipientRule(deps: {
  localDomains: readonly string[];
  servedDomain?: ((domain: string) => Promise<string | undefined>) | undefined;
}) {
  const local = localDomainSet(deps.localDomains);
  return {
    /** The first local domain, as configured (postmaster@ goes there when nothing else takes it). */
    defaultDomain: local.defaultDomain,
    /** The inbox `address` names, or undefined when it names none here. */
    async inboxIdOf(address: string): Promise<string | undefined> {
      const lower = address.trim().toLowerCase();
      const inboxId = local.inboxId(lower);
      if (inboxId !== undefined || !deps.servedDomain || !lower.includes('@')) return inboxId;
      const served = await deps.servedDomain(domainOf(lower));
      return served === undefined ? undefined : `${lower.slice(0, lower.lastIndexOf('@'))}@${served}`;
    },
  };
}

export type RecipientRule = ReturnType<typeof recipientRule>;
