import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stoppable } from './harness.mjs';

/**
 * A private Dovecot instance, the anchor of `bench:imap`: Debian's dovecot-imapd with a
 * configuration, base and state directory of its own under `dir` (never the system's service),
 * IMAP on 127.0.0.1:`port` only, no TLS, one user (`bench`, any password) whose mail is the
 * Maildir `dir/Maildir`, owned by Dovecot's own unprivileged user. No FTS plugin: Dovecot's
 * default, which searches bodies by reading them. The processes run pinned to `cpu`.
 */

const DOVECOT = '/usr/sbin/dovecot';

/** Installs Debian's dovecot-imapd when it is missing; the system service is stopped if the package started it. */
export function ensureDovecot() {
  if (existsSync(DOVECOT)) return;
  console.log('dovecot is not installed: apt-get install dovecot-imapd');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const r = spawnSync(
    'flock',
    ['/tmp/apt.lock', 'sh', '-c', 'apt-get update -qq && apt-get install -y -qq --no-install-recommends dovecot-imapd'],
    { env, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (r.status !== 0) throw new Error(`apt-get install dovecot-imapd failed (${r.status})`);
  spawnSync('sh', ['-c', 'service dovecot stop || systemctl stop dovecot || true'], { stdio: 'ignore' });
}

export function dovecotVersion() {
  return `Dovecot ${spawnSync(DOVECOT, ['--version'], { encoding: 'utf8' }).stdout.trim()}`;
}

const uidOf = (user) => Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout.trim());
const gidOf = (user) => Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout.trim());

/** Writes `sources` (Buffers, in order) as the messages of the Maildir's INBOX, unread. */
export function writeMaildir(dir, sources) {
  const maildir = path.join(dir, 'Maildir');
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(path.join(maildir, sub), { recursive: true });
  const start = Math.floor(Date.now() / 1000) - sources.length;
  sources.forEach((source, i) => {
    const name = `${start + i}.M${i}P1.bench,S=${source.length}:2,`;
    writeFileSync(path.join(maildir, 'cur', name), source);
  });
  chownTree(dir, uidOf('dovecot'), gidOf('dovecot'));
}

function chownTree(dir, uid, gid) {
  chownSync(dir, uid, gid);
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) chownTree(p, uid, gid);
    else chownSync(p, uid, gid);
  }
}

const config = (dir, port) =>
  [
    `base_dir = ${dir}/run`,
    `state_dir = ${dir}/state`,
    `log_path = ${dir}/dovecot.log`,
    `instance_name = bench-${port}`,
    'protocols = imap',
    'listen = 127.0.0.1',
    'ssl = no',
    'disable_plaintext_auth = no',
    'auth_mechanisms = plain login',
    'first_valid_uid = 1',
    'default_internal_user = dovecot',
    'default_login_user = dovenull',
    `mail_location = maildir:${dir}/Maildir`,
    'passdb {',
    '  driver = static',
    '  args = nopassword=y',
    '}',
    'userdb {',
    '  driver = static',
    `  args = uid=dovecot gid=dovecot home=${dir}/home`,
    '}',
    'service imap-login {',
    '  inet_listener imap {',
    '    address = 127.0.0.1',
    `    port = ${port}`,
    '  }',
    '  inet_listener imaps {',
    '    port = 0',
    '  }',
    '}',
    'service stats {',
    '  unix_listener stats-writer {',
    '    mode = 0666',
    '  }',
    '}',
    '',
  ].join('\n');

async function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts Dovecot in the foreground on `port`, pinned to `cpu`; resolves once it accepts connections. */
export async function startDovecot({ dir, port, cpu }) {
  for (const sub of ['run', 'state', 'home']) mkdirSync(path.join(dir, sub), { recursive: true });
  chownSync(path.join(dir, 'home'), uidOf('dovecot'), gidOf('dovecot'));
  const file = path.join(dir, 'dovecot.conf');
  writeFileSync(file, config(dir, port));
  const child = spawn('taskset', ['-c', cpu, DOVECOT, '-F', '-c', file], { stdio: ['ignore', 'inherit', 'inherit'] });
  for (let i = 0; i < 200 && child.exitCode === null; i++) {
    if (await accepts(port)) break;
    await sleep(50);
  }
  if (child.exitCode !== null || !(await accepts(port))) {
    child.kill('SIGKILL');
    throw new Error(`dovecot did not start (see ${dir}/dovecot.log)`);
  }
  return stoppable(child);
}
