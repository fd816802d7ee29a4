// First: the collector's settings before any other module runs (decision 0056; the bundle's start,
// scripts/build-once.mjs, imports them before the bundle).
import './platform/gc-tuning.js';
import { pino } from 'pino';
import { ConfigError, loadConfig } from './platform/config/config.js';
import { closeOnSignals } from './platform/http/app.js';
import { inboxConfigSpec } from './inbox/inbox.config.js';
import { startInboxService } from './inbox/service.js';
import { propertyConfigSpec } from './property/property.config.js';
import { startPropertyService } from './property/service.js';

/** `npm start`: every service of the repository in one process, with defaults that need no setup. */
async function main(): Promise<void> {
  let inboxConfig;
  let propertyConfig;
  const problems: string[] = [];
  try {
    inboxConfig = loadConfig(inboxConfigSpec);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  try {
    propertyConfig = loadConfig(propertyConfigSpec);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  if (!inboxConfig || !propertyConfig) {
    process.stderr.write(`Invalid configuration:\n${[...new Set(problems)].map((p) => `  - ${p}`).join('\n')}\n`);
    process.exit(78);
  }
  const log = pino({ level: propertyConfig.logLevel, name: 'main' });
  const inbox = await startInboxService(inboxConfig);
  const property = await startPropertyService(propertyConfig).catch(async (err: unknown) => {
    await inbox.close();
    throw err;
  });
  process.stdout.write(
    inbox.url
      ? `Inbox service:    ${inbox.url}/v0  (docs: ${inbox.url}/v0/docs)\n`
      : `Inbox service:    no HTTP API in this process (INBOX_ROLES=${inboxConfig.roles.join(',')})\n`,
  );
  if (inbox.smtp) process.stdout.write(`Inbox SMTP:       smtp://${inbox.smtp.host}:${inbox.smtp.port}\n`);
  if (inbox.imap) process.stdout.write(`Inbox IMAP:       imap://${inbox.imap.host}:${inbox.imap.port}\n`);
  if (inbox.submission)
    process.stdout.write(`Inbox submission: smtp://${inbox.submission.host}:${inbox.submission.port}\n`);
  process.stdout.write(
    `Property service: ${property.url}/api  (docs: ${property.url}/api/docs.html, admin: ${property.url}/admin)\n`,
  );
  closeOnSignals([() => inbox.close(), () => property.close()], log);
}

main().catch((err: unknown) => {
  // A setting found wrong only at start (a DATA_DIR that cannot be written) exits as a bad setting does.
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(78);
  }
  process.stderr.write(`failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
