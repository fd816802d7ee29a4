import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A private Postfix instance, the anchor of `bench:smtp --anchor postfix`: Debian's postfix with a
 * configuration directory, queue and data directory of its own under `dir` (never the system's),
 * smtpd on 127.0.0.1:`port` only, every message put on hold after DATA
 * (`smtpd_data_restrictions = check_client_access static:HOLD`: smtpd → cleanup → the queue file
 * written and fsynced → 250, then it stays in the hold queue, never delivered) and discard as
 * every transport, should anything leave hold. The processes run pinned to `cpu` (master and every
 * child it forks inherit the affinity). Also `smtp-source`, Postfix's load generator.
 */

const POSTFIX = '/usr/sbin/postfix';
export const SMTP_SOURCE = '/usr/sbin/smtp-source';

/** Installs Debian's postfix (which ships smtp-source) when it is missing; the system instance is not started. */
export function ensurePostfix() {
  if (existsSync(POSTFIX) && existsSync(SMTP_SOURCE)) return;
  console.log('postfix is not installed: apt-get install postfix');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (command, args, input) => {
    const r = spawnSync(command, args, { env, input, stdio: [input ? 'pipe' : 'ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status})`);
  };
  run('debconf-set-selections', [], 'postfix postfix/main_mailer_type select No configuration\n');
  run('flock', [
    '/tmp/apt.lock',
    'sh',
    '-c',
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends postfix',
  ]);
}

/** The services smtpd needs to take a message into the queue; none chrooted (the queue is not the system's). */
const MASTER_CF = (port) =>
  [
    `127.0.0.1:${port} inet n - n - - smtpd`,
    'pickup unix n - n 60 1 pickup',
    'cleanup unix n - n - 0 cleanup',
    'qmgr unix n - n 300 1 qmgr',
    'rewrite unix - - n - - trivial-rewrite',
    'bounce unix - - n - 0 bounce',
    'defer unix - - n - 0 bounce',
    'trace unix - - n - 0 bounce',
    'verify unix - - n - 1 verify',
    'flush unix n - n 1000? 0 flush',
    'proxymap unix - - n - - proxymap',
    'showq unix n - n - - showq',
    'error unix - - n - - error',
    'retry unix - - n - - error',
    'discard unix - - n - - discard',
    'anvil unix - - n - 1 anvil',
    'scache unix - - n - 1 scache',
    'postlog unix-dgram n - n - 1 postlogd',
    '',
  ].join('\n');

const MAIN_CF = (dir) =>
  [
    'compatibility_level = 3.6',
    `queue_directory = ${dir}/queue`,
    `data_directory = ${dir}/data`,
    'mail_owner = postfix',
    'setgid_group = postdrop',
    'myhostname = mx.postfix.localhost',
    'mydomain = postfix.localhost',
    'myorigin = $myhostname',
    'inet_interfaces = 127.0.0.1',
    'inet_protocols = ipv4',
    'mynetworks = 127.0.0.0/8',
    'mydestination =',
    'local_recipient_maps =',
    'alias_maps =',
    'alias_database =',
    'biff = no',
    // Every message is held after DATA: written and fsynced, then left in the hold queue.
    'smtpd_data_restrictions = check_client_access static:HOLD',
    'default_transport = discard',
    'relay_transport = discard',
    'local_transport = discard',
    'virtual_transport = discard',
    // Its log goes to a file of its own (postlogd), not to the system's syslog.
    `maillog_file = ${dir}/maillog`,
    `maillog_file_prefixes = ${dir}`,
    // Connections come from one address; no limit of Postfix's own should refuse any.
    'smtpd_client_connection_count_limit = 0',
    'smtpd_client_connection_rate_limit = 0',
    'smtpd_client_message_rate_limit = 0',
    '',
  ].join('\n');

/**
 * Creates the instance's directories and configuration; `start()` runs it, `held()` counts its
 * hold queue. `dir` and the folders above it must be searchable by the postfix user.
 */
export function postfixInstance({ dir, port, cpu }) {
  const conf = path.join(dir, 'etc');
  const queue = path.join(dir, 'queue');
  mkdirSync(conf, { recursive: true });
  const data = path.join(dir, 'data');
  mkdirSync(data, { recursive: true });
  const [uid, gid] = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((line) => line.startsWith('postfix:'))
    .split(':')
    .slice(2, 4)
    .map(Number);
  chownSync(data, uid, gid);
  writeFileSync(path.join(conf, 'main.cf'), MAIN_CF(dir));
  writeFileSync(path.join(conf, 'master.cf'), MASTER_CF(port));
  const postfix = (...args) => {
    const r = spawnSync('taskset', ['-c', cpu, POSTFIX, '-c', conf, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`postfix ${args.join(' ')} failed: ${r.stderr || r.stdout}${logTail()}`);
  };
  /** Postfix reports its errors to its log, not to stderr. */
  const logTail = () => {
    try {
      return `\n${readFileSync(path.join(dir, 'maillog'), 'utf8').trim().split('\n').slice(-5).join('\n')}`;
    } catch {
      return '';
    }
  };
  const masterPid = () => {
    try {
      return Number(readFileSync(path.join(queue, 'pid', 'master.pid'), 'utf8').trim());
    } catch {
      return undefined;
    }
  };
  return {
    conf,
    /** Starts with an empty queue (postfix-script creates the queue's directories); resolves once smtpd answers. */
    async start() {
      rmSync(queue, { recursive: true, force: true });
      // `postfix start` makes the queue's subdirectories (owned by the postfix user) in it.
      mkdirSync(queue, { mode: 0o755 });
      chmodSync(dir, 0o755);
      postfix('start');
      for (let i = 0; i < 100 && !masterPid(); i++) await sleep(100);
      if (!masterPid()) throw new Error('postfix did not start');
      return masterPid();
    },
    /** Stops it if it runs (`postfix stop` waits for master to exit). */
    stop() {
      spawnSync(POSTFIX, ['-c', conf, 'stop'], { stdio: 'ignore' });
    },
    /** Messages in the hold queue (one file each). */
    held: () => filesUnder(path.join(queue, 'hold')),
    /** Messages anywhere else in the queue (incoming, active, deferred): must be 0 once every one is held. */
    elsewhere: () =>
      ['incoming', 'active', 'deferred', 'maildrop'].reduce((n, name) => n + filesUnder(path.join(queue, name)), 0),
    masterPid,
  };
}

const filesUnder = (d) =>
  existsSync(d)
    ? readdirSync(d, { withFileTypes: true }).reduce(
        (n, e) => n + (e.isDirectory() ? filesUnder(path.join(d, e.name)) : 1),
        0,
      )
    : 0;
