// First: the collector's settings before any other module runs (decision 0056; the bundle's start,
// scripts/build-once.mjs, imports them before the bundle).
import '../platform/gc-tuning.js';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '../platform/config/config.js';
import { closeOnSignals } from '../platform/http/app.js';
import { propertyConfigSpec } from './property.config.js';
import { startPropertyService } from './service.js';

/** Process entry of the property service alone (`npm run start:property`). */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(propertyConfigSpec);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
  const service = await startPropertyService(config);
  const log = pino({ level: config.logLevel, name: 'property' });
  log.info(
    `property service listening on ${service.url}/api (docs: ${service.url}/api/docs.html, database: ${service.database.description})`,
  );
  process.stdout.write(
    `Property service: ${service.url}/api  (docs: ${service.url}/api/docs.html, admin: ${service.url}/admin)\n`,
  );
  closeOnSignals([() => service.close()], log);
}

main().catch((err: unknown) => {
  process.stderr.write(`property service failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
