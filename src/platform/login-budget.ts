/**
 * Failed logins of a protocol without HTTP (IMAP, SMTP submission) per user name and per client
 * address in a window, in this process: a budget of `limit` per user name and ten times as many
 * per address (one address may be a whole office behind NAT). Only failures count.
 */
export function loginBudget(limit: number, windowMs = 15 * 60_000, now: () => number = Date.now) {
  const failures = new Map<string, { start: number; count: number }>();
  const keysOf = (user: string, address: string) => [`user:${user.toLowerCase()}`, `ip:${address}`];
  const limitOf = (key: string) => (key.startsWith('ip:') ? limit * 10 : limit);
  const current = (key: string, at: number) => {
    const f = failures.get(key);
    return f && at - f.start < windowMs ? f : undefined;
  };
  return {
    /** Whether a login of `user` from `address` is refused without being tried. */
    blocked(user: string, address: string): boolean {
      const at = now();
      return keysOf(user, address).some((k) => (current(k, at)?.count ?? 0) >= limitOf(k));
    },
    failed(user: string, address: string): void {
      const at = now();
      if (failures.size > 100_000) for (const [k, f] of failures) if (at - f.start >= windowMs) failures.delete(k);
      for (const k of keysOf(user, address)) {
        const f = current(k, at) ?? { start: at, count: 0 };
        f.count += 1;
        failures.set(k, f);
      }
    },
  };
}

export type LoginBudget = ReturnType<typeof loginBudget>;
