import { Ajv, type Options } from 'ajv';
import ajvFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const common: Options = { allErrors: false, removeAdditional: true, useDefaults: true, strict: false };

/**
 * Validators for schema-first routes. Query strings and path parameters are text, so they are
 * coerced (`limit=5` → 5); bodies are JSON and must already have the right types: coercing them
 * would turn `{"display_name": 5}` into "5" and `null` into "" without a word.
 */
export function schemaValidators(): FastifySchemaCompiler<unknown> {
  const strict = new Ajv({ ...common, coerceTypes: false });
  const coercing = new Ajv({ ...common, coerceTypes: 'array' });
  for (const ajv of [strict, coercing]) (ajvFormats as unknown as (a: Ajv) => void)(ajv);
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}
