import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

export interface CorsPolicy {
  /** Allowed origins; `*` allows any. */
  readonly origins: readonly string[];
  readonly methods: readonly string[];
  readonly allowedHeaders: readonly string[];
  readonly exposedHeaders: readonly string[];
  readonly maxAgeSeconds: number;
}

/**
 * The CORS headers of an actual (non-preflight) request, computed once per origin policy.
 * `@fastify/cors` does the same work through a per-request hook that copies its options and
 * resolves the origin through callbacks, a measurable share of a fast route; the answer only
 * depends on the request's Origin, so it is a table lookup here.
 */
export function corsResponseHeaders(
  policy: CorsPolicy,
): (origin: string | undefined) => Readonly<Record<string, string>> {
  const expose = policy.exposedHeaders.join(', ');
  if (policy.origins.includes('*')) {
    const any = Object.freeze({ 'access-control-allow-origin': '*', 'access-control-expose-headers': expose });
    return () => any;
  }
  const allowed = new Set(policy.origins);
  // The answer depends on Origin: caches must know, whether or not this origin is allowed.
  const refused = Object.freeze({ vary: 'Origin' });
  const byOrigin = new Map(
    policy.origins.map((o) => [
      o,
      Object.freeze({ vary: 'Origin', 'access-control-allow-origin': o, 'access-control-expose-headers': expose }),
    ]),
  );
  return (origin) =>
    origin !== undefined && allowed.has(origin) ? (byOrigin.get(origin) as Record<string, string>) : refused;
}

/**
 * Answers preflight requests (OPTIONS) with `@fastify/cors`, registered in its own encapsulated
 * context so that its hook runs for preflights only; actual requests get `corsResponseHeaders`.
 */
export async function registerCorsPreflight(app: FastifyInstance, policy: CorsPolicy): Promise<void> {
  await app.register(async (preflight) => {
    await preflight.register(cors, {
      origin: policy.origins.includes('*') ? '*' : [...policy.origins],
      methods: [...policy.methods],
      allowedHeaders: [...policy.allowedHeaders],
      exposedHeaders: [...policy.exposedHeaders],
      maxAge: policy.maxAgeSeconds,
    });
  });
}
