// @ts-expect-error -- a plain ES module shared with the property bench, typed here
import * as shared from '../../bench/lib/varnish.mjs';

/**
 * A private Varnish for one test file (bench/lib/varnish.mjs, shared with the bench's writecost
 * suite): its own working directory under a temp dir, a loopback port, no management port, no
 * jail, the VCL of test/fixtures/varnish.vcl in front of one backend.
 */
export interface PrivateVarnish {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Counters of varnishstat (MAIN.*), e.g. `cache_hit`, `cache_miss`, `backend_req`, `bans`. */
  stats(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export const VARNISHD = shared.VARNISHD as string;
export const hasVarnish = shared.hasVarnish as boolean;
export const startVarnish = shared.startVarnish as (options: {
  port: number;
  backendPort: number;
}) => Promise<PrivateVarnish>;

/** The service must know the cache's port before Varnish starts. */
export { freePort } from './ports.js';
