import { readdirSync, readFileSync } from 'node:fs';

/**
 * Inputs for tests that compare a fast path with the general one: a small deterministic
 * generator (mulberry32, so that a failure names a reproducible case) and the `.eml` corpus.
 */

/** Numbers in [0, 1) from `seed`, the same sequence every run. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIXTURES = new URL('../fixtures/', import.meta.url);

/** Every message of test/fixtures/eml and test/fixtures/dsn, named `dir/file`. */
export const emlCorpus: readonly { readonly name: string; readonly bytes: Buffer }[] = ['eml', 'dsn'].flatMap((dir) =>
  readdirSync(new URL(`${dir}/`, FIXTURES))
    .filter((f) => f.endsWith('.eml'))
    .map((f) => ({ name: `${dir}/${f}`, bytes: readFileSync(new URL(`${dir}/${f}`, FIXTURES)) })),
);

/** The message with CRLF line ends, as it arrives over SMTP (the files may hold LF). */
export const crlf = (bytes: Buffer): Buffer =>
  Buffer.from(bytes.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
