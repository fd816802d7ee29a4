// First: the collector's settings before any other module runs (decision 0056; the bundle's start,
// scripts/build-once.mjs, imports them before the bundle).
import '../platform/gc-tuning.js';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '../platform/config/config.js';
import { closeOnSignals } from '../platform/http/app.js';
import { inboxConfigSpec } from './inbox.config.js';
import { startInboxService } from './service.js';

/** Process entry of the inbox service alone (`npm run start:inbox`). */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(inboxConfigSpec);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
  const service = await startInboxService(config);
  const log = pino({ level: config.logLevel, name: 'inbox' });
  process.stdout.write(
    `Inbox service: ${service.url ?? '(no api role)'}/v0  (roles: ${config.roles.join(', ')}; docs: ${service.url ?? ''}/v0/docs)\n`,
  );
  if (service.smtp) process.stdout.write(`Inbox SMTP:    smtp://${service.smtp.host}:${service.smtp.port}\n`);
  if (service.imap) process.stdout.write(`Inbox IMAP:    imap://${service.imap.host}:${service.imap.port}\n`);
  if (service.submission)
    process.stdout.write(`Inbox submission: smtp://${service.submission.host}:${service.submission.port}\n`);
  closeOnSignals([() => service.close()], log);
}

main().catch((err: unknown) => {
  process.stderr.write(`inbox service failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
