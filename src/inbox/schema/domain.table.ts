export interface DomainTable {
  organization_id: string;
  /** The ASCII (xn--), lower-case spelling: the domain_id. */
  domain: string;
  /** Null: the organization's, usable by every pod. */
  pod_id: string | null;
  status: string;
  reason: string | null;
  /** 0/1 */
  feedback_enabled: number;
  subdomains_enabled: number;
  tracking_enabled: number;
  dkim_selector: string;
  /** The `p=` value of the DKIM record (base64 DER SubjectPublicKeyInfo). */
  dkim_public_key: string;
  /** PKCS#8 PEM, encrypted (domains/domain-keys.ts); never leaves the repository undecrypted in a response. */
  dkim_private_key: string;
  /** JSON: the outcome of the last DNS check per record (`{ "<type> <name>": { status, reason? } }`). */
  record_checks: string | null;
  /** = domain while VERIFIED, else null (unique: one organization owns a verified domain). */
  claimed_domain: string | null;
  checked_at: string | null;
  created_at: string;
  updated_at: string;
}
