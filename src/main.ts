import { pino } from 'pino';
import { ConfigError, loadConfig } from './platform/config/config.js';
import { closeOnSignals } from './platform/http/app.js';
import { propertyConfigSpec } from './property/property.config.js';
import { startPropertyService } from './property/service.js';

/** `npm start`: every service of the repository in one process, with defaults that need no setup. */
async function main(): Promise<void> {
  let propertyConfig;
  try {
    propertyConfig = loadConfig(propertyConfigSpec);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
  const log = pino({ level: propertyConfig.logLevel, name: 'main' });
  const property = await startPropertyService(propertyConfig);
  process.stdout.write(`Property service: ${property.url}/api  (docs: ${property.url}/api/docs.html)\n`);
  closeOnSignals([() => property.close()], log);
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
