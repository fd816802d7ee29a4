import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/** The repository root, where `npm start` and `npm run cli` run. */
export const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

/** A service process started from its TypeScript entry, with everything it printed so far. */
export interface EntryRun {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
}

/**
 * Starts `tsx <entry>` (e.g. `src/main.ts`) at the repository root with only PATH, HOME and `env`
 * in its environment, stdout and stderr collected together.
 */
export function runEntry(entry: string, env: Record<string, string>): EntryRun {
  const child = spawn(TSX, [entry], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Resolves with the first match of `pattern` in what the process printed; fails when it exits first. */
export async function waitFor(r: EntryRun, pattern: RegExp, ms = 30_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = pattern.exec(r.output());
    if (m) return m;
    if (Date.now() > deadline || r.child.exitCode !== null)
      throw new Error(`did not see ${pattern} in:\n${r.output()}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `tsx src/cli.ts …` (no build needed) with `env` added to this process's environment. */
export function runCli(args: readonly string[], env: Readonly<Record<string, string>>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      TSX,
      ['src/cli.ts', ...args],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') reject(error);
        else resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
  });
}
