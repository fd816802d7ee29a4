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

export function formatProfile(summary) {
  const lines = [`busy ${summary.busyMs} ms`, 'by origin:'];
  for (const o of summary.byOrigin) lines.push(`  ${String(o.share).padStart(5)} %  ${o.name}`);
  lines.push('top functions (self time):');
  for (const f of summary.byFunction) lines.push(`  ${String(f.share).padStart(5)} %  ${f.name}`);
  return lines.join('\n');
}

if (process.argv[1]?.endsWith('profile.mjs') && process.argv[2])
  console.log(formatProfile(summarizeProfile(process.argv[2], Number(process.argv[3] ?? 25))));
