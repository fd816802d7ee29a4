#!/usr/bin/env node
// Prints one field of the JSON read from stdin, for the README's walk-throughs:
//   KEY=$(curl -sS … | node scripts/json-field.mjs apiKey)
// A path of several keys is dotted (`inboxes.0.inbox_id`). When the input is not JSON or has no
// such field (an error answer, most often), it prints the input to stderr and exits 1, so that the
// walk-through stops at the cause instead of going on with an empty value.
import { readFileSync } from 'node:fs';

const field = process.argv[2];
if (!field) {
  process.stderr.write('usage: … | node scripts/json-field.mjs <field>[.<field>…]\n');
  process.exit(64);
}
const text = readFileSync(0, 'utf8');
let value;
try {
  value = field
    .split('.')
    .reduce((at, key) => (at === null || at === undefined ? undefined : at[key]), JSON.parse(text));
} catch {
  value = undefined;
}
if (value === undefined || value === null || typeof value === 'object') {
  process.stderr.write(`json-field: no "${field}" in this answer:\n${text.trim() || '(nothing)'}\n`);
  process.exit(1);
}
process.stdout.write(`${String(value)}\n`);
