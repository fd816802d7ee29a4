import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A key and a self-signed certificate in PEM files, as the TLS settings of the listeners take them. */
export interface TestCertificate {
  readonly dir: string;
  readonly key: string;
  readonly cert: string;
  /** Issues a new pair for `commonName` into the files (a renewal), or into other files. */
  issue(commonName: string, key?: string, cert?: string): void;
  remove(): void;
}

/**
 * A fresh RSA key and a one-day self-signed certificate for `commonName` in a scratch folder
 * (openssl, as an operator would make one), for the STARTTLS and implicit-TLS suites.
 */
export function testCertificate(commonName: string): TestCertificate {
  const dir = mkdtempSync(path.join(tmpdir(), 'test-pem-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  const issue = (cn: string, keyFile = key, certFile = cert) =>
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1'].concat([
        '-subj',
        `/CN=${cn}`,
      ]),
      { stdio: 'ignore' },
    );
  issue(commonName);
  return { dir, key, cert, issue, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
