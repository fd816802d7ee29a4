import { readFileSync } from 'node:fs';

/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and returns where the busy time went: self time per
 * function and per origin (package, Node internals, our dist/ code, GC), idle time left out.
 */

const IDLE = new Set(['(idle)', '(root)']);

function origin(url, functionName) {
  if (!url) return functionName.startsWith('(') ? functionName : '(native/builtin)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node internals';
  const ours = /\/(?:dist|\.dist-snapshot[\w-]*)\/(src\/.+)$/.exec(url);
  return ours ? ours[1] : url;
}

export function summarizeProfile(file, top = 25) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const byFunction = new Map();
  const byOrigin = new Map();
  let busy = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame;
    if (IDLE.has(functionName)) continue;
    busy += us;
    const name =
      `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^.*\/\.dist-snapshot[\w-]*\//, 'dist/')}:${lineNumber + 1}` : ''}`.trim();
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const o = origin(url, functionName);
    byOrigin.set(o, (byOrigin.get(o) ?? 0) + us);
  }
  const rank = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: Math.round((1000 * us) / busy) / 10 }));
  return { busyMs: Math.round(busy / 1000), byOrigin: rank(byOrigin), byFunction: rank(byFunction) };
}

/**
 * The long tasks of a profile: every stretch of consecutive busy samples (no `(idle)` between
 * them: the thread never went back to wait for events) of `minMs` or more, longest first, each
 * with where its time went: per sample, the innermost frame of our own code (dist/src) on the
 * stack, with the function that was running (self) beside it when that is not ours.
 */
export function longTasks(file, minMs = 10, top = 15) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const short = (frame) =>
    `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${frame.lineNumber + 1}`;
  const label = (id) => {
    const self = nodes.get(id).callFrame;
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = nodes.get(at).callFrame;
      if (/\/dist\/src\//.test(frame.url))
        return at === id ? short(frame) : `${short(frame)} → ${self.functionName || self.url || '(anonymous)'}`;
    }
    return self.url ? short(self) : self.functionName;
  };
  const tasks = [];
  let current;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    const id = profile.samples[i];
    if (IDLE.has(nodes.get(id).callFrame.functionName)) {
      if (current && current.us >= minMs * 1000) tasks.push(current);
      current = undefined;
      continue;
    }
    current ??= { at: t, us: 0, where: new Map() };
    current.us += delta;
    const where = label(id);
    current.where.set(where, (current.where.get(where) ?? 0) + delta);
  }
  if (current && current.us >= minMs * 1000) tasks.push(current);
  return tasks
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((task) => ({
      ms: Math.round(task.us / 1000),
      atMs: Math.round((task.at - profile.startTime) / 1000),
      where: [...task.where]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 4)
        .map(([name, us]) => `${Math.round(us / 1000)} ms ${name}`),
    }));
}

export function formatLongTasks(tasks) {
  return tasks.map((task) => `${task.ms} ms at ${task.atMs} ms: ${task.where.join('; ')}`).join('\n');
}

export function formatProfile(summary) {
  const lines = [`busy ${summary.busyMs} ms`, 'by origin:'];
  for (const o of summary.byOrigin) lines.push(`  ${String(o.share).padStart(5)} %  ${o.name}`);
  lines.push('top functions (self time):');
  for (const f of summary.byFunction) lines.push(`  ${String(f.share).padStart(5)} %  ${f.name}`);
  return lines.join('\n');
}

if (process.argv[1]?.endsWith('profile.mjs') && process.argv[2] === '--long')
  console.log(
    formatLongTasks(longTasks(process.argv[3], Number(process.argv[4] ?? 10), Number(process.argv[5] ?? 15))),
  );
else if (process.argv[1]?.endsWith('profile.mjs') && process.argv[2])
  console.log(formatProfile(summarizeProfile(process.argv[2], Number(process.argv[3] ?? 25))));
