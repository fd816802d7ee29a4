/**
 * The key lookup every /v0 request makes (decision 0018): findKeyOwnerByHash (scope, permissions
 * and the agent sign-up join) beside the lookup it replaced (id and organization only), on the
 * same database with 2,000 keys. There is no cache in front of either, so this is the whole
 * per-request cost of authentication in the database. Usage:
 *   flock /tmp/bench.lock npx tsx bench/key-lookup.ts [sqlite|postgres://…]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/platform/config/config.js';
import { hashSecret } from '../src/platform/ids.js';
import { findKeyOwnerByHash, insertApiKey, insertOrganization } from '../src/inbox/api-keys/api-key.repository.js';
import { insertPod } from '../src/inbox/pods/pod.repository.js';
import { inboxConfigSpec } from '../src/inbox/inbox.config.js';
import { migrateInbox, openInboxDatabase } from '../src/inbox/open-database.js';

const KEYS = 2_000;
const LOOKUPS = 5_000;
const dir = mkdtempSync(path.join(tmpdir(), 'key-lookup-'));
const url = process.argv[2] && process.argv[2] !== 'sqlite' ? process.argv[2] : `sqlite:${path.join(dir, 'inbox.db')}`;
const database = await openInboxDatabase(loadConfig(inboxConfigSpec, { DATA_DIR: dir, INBOX_DATABASE_URL: url }));
try {
  await migrateInbox(database);
  const db = database.db;
  const now = new Date().toISOString();
  const hashes: string[] = [];
  await db.transaction().execute(async (trx) => {
    for (let o = 0; o < KEYS / 10; o += 1) {
      await insertOrganization(trx, { id: `org_b${o}`, name: 'b', createdAt: now });
      await insertPod(trx, { id: `pod_b${o}`, organizationId: `org_b${o}`, name: 'p', createdAt: now });
      for (let k = 0; k < 10; k += 1) {
        const hash = hashSecret(`am_bench_${o}_${k}`);
        hashes.push(hash);
        await insertApiKey(trx, {
          id: `key_b${o}_${k}`,
          organizationId: `org_b${o}`,
          name: 'k',
          keyHash: hash,
          keyPrefix: 'am_bench',
          createdAt: now,
          ...(k % 2 ? { podId: `pod_b${o}`, permissions: { inboxRead: true } } : {}),
        });
      }
    }
  });
  const baseline = (hash: string) =>
    db.selectFrom('api_keys').select(['id', 'organization_id']).where('key_hash', '=', hash).executeTakeFirst();
  const candidates = { baseline, findKeyOwnerByHash: (hash: string) => findKeyOwnerByHash(db, hash) };
  const results: Record<string, number[]> = { baseline: [], findKeyOwnerByHash: [] };
  for (let round = 0; round < 3; round += 1) {
    for (const [name, lookup] of Object.entries(candidates)) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < LOOKUPS; i += 1) await lookup(hashes[(i * 7919) % hashes.length] as string);
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      results[name]?.push((ms * 1000) / LOOKUPS);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1] as number;
  const b = median(results.baseline as number[]);
  const c = median(results.findKeyOwnerByHash as number[]);
  console.log(
    JSON.stringify({
      database: url.split(':')[0],
      keys: KEYS,
      lookups: LOOKUPS,
      baseline_us: +b.toFixed(1),
      findKeyOwnerByHash_us: +c.toFixed(1),
      ratio: +(c / b).toFixed(2),
    }),
  );
} finally {
  await database.destroy();
  rmSync(dir, { recursive: true, force: true });
}
