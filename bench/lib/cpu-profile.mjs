import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * `node bench/lib/cpu-profile.mjs file.cpuprofile [--top 30] [--filter text]`: the functions of a
 * V8 CPU profile (node --cpu-prof) by self time and by inclusive time, in milliseconds, so that a
 * bench's server time can be read without a browser. A function is named by its name, file and
 * line; `--filter` keeps the rows whose name holds the text; `--callers name` lists the callers of
 * the functions whose name holds it, by the time spent in them from there.
 */

const files = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
const option = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const top = Number(option('top', 30));
const filter = option('filter', '');
const callersOf = option('callers', '');

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Time per sample: the delta that follows it.
  const selfUs = new Map();
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
  });
  const key = (n) => {
    const f = n.callFrame;
    return `${f.functionName || '(anonymous)'} ${f.url ? path.basename(f.url) : ''}:${f.lineNumber + 1}`;
  };
  const self = new Map();
  const inclusive = new Map();
  for (const [id, us] of selfUs) {
    const n = nodes.get(id);
    self.set(key(n), (self.get(key(n)) ?? 0) + us);
    // Each function once per stack, however often it recurs in it.
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const k = key(nodes.get(cur));
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const print = (title, map) => {
    console.log(`\n${title} (${path.basename(file)}, ${(total / 1000).toFixed(0)} ms sampled)`);
    [...map]
      .filter(([k]) => k.includes(filter))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .forEach(([k, us]) => console.log(`${(us / 1000).toFixed(1).padStart(10)} ms  ${k}`));
  };
  if (callersOf) {
    const callers = new Map();
    for (const [id, us] of selfUs) {
      const seen = new Set();
      for (let cur = id; parent.get(cur) !== undefined; cur = parent.get(cur)) {
        if (!key(nodes.get(cur)).includes(callersOf)) continue;
        const k = `${key(nodes.get(parent.get(cur)))} -> ${key(nodes.get(cur))}`;
        if (seen.has(k)) continue;
        seen.add(k);
        callers.set(k, (callers.get(k) ?? 0) + us);
      }
    }
    print(`callers of ${callersOf}`, callers);
    continue;
  }
  print('self', self);
  print('inclusive', inclusive);
}
