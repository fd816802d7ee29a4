import { Ajv, type Options, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import fastJsonStringify from 'fast-json-stringify';
import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';

const common: Options = { allErrors: false, removeAdditional: true, useDefaults: true, strict: false };

export interface SchemaCompilers {
  readonly validatorCompiler: FastifySchemaCompiler<unknown>;
  readonly serializerCompiler: FastifySerializerCompiler<unknown>;
}

/**
 * Validators and response serializers for schema-first routes, each compiled when its route is
 * first called rather than when the app is built: compiling the inbox app's ~150 routes (ajv and
 * fast-json-stringify) took about half of its start-up (issue 13, item 18; decision 0021). A route
 * pays its compilation once, on its first request in this process.
 *
 * Query strings and path parameters are text, so they are coerced (`limit=5` → 5); bodies are JSON
 * and must already have the right types: coercing them would turn `{"display_name": 5}` into "5"
 * and `null` into "" without a word. `externalSchemas` are the app's shared schemas (`addSchema`),
 * read at the first compilation, after every route and schema is registered.
 */
export function schemaCompilers(externalSchemas: () => Record<string, unknown>): SchemaCompilers {
  let ajvs: { strict: Ajv; coercing: Ajv } | undefined;
  const ajvOf = (httpPart: string | undefined): Ajv => {
    if (!ajvs) {
      ajvs = {
        strict: new Ajv({ ...common, coerceTypes: false }),
        coercing: new Ajv({ ...common, coerceTypes: 'array' }),
      };
      for (const ajv of [ajvs.strict, ajvs.coercing]) (ajvFormats as unknown as (a: Ajv) => void)(ajv);
    }
    return httpPart === 'body' ? ajvs.strict : ajvs.coercing;
  };

  return {
    validatorCompiler: ({ schema, httpPart }) => {
      let compiled: ValidateFunction | undefined;
      const validator = () => (compiled ??= ajvOf(httpPart).compile(schema as object));
      const validate = (data: unknown, context?: object) => validator()(data, context as never);
      // Fastify reads these off the function: `schemaEnv` (present on ajv's functions) before the
      // first call, to pass the parent so that ajv may replace a coerced root; `errors` after a failure.
      Object.defineProperty(validate, 'schemaEnv', { get: () => validator().schemaEnv });
      Object.defineProperty(validate, 'errors', { get: () => validator().errors });
      return validate;
    },
    serializerCompiler: ({ schema }) => {
      let compiled: ((data: unknown) => string) | undefined;
      return (data: unknown) => {
        if (!compiled) {
          // As Fastify's own compiler: a schema that is itself shared is not also passed as external.
          const { [(schema as { $id?: string }).$id ?? '']: _self, ...external } = externalSchemas();
          compiled = fastJsonStringify(schema as object, {
            schema: external as Record<string, fastJsonStringify.Schema>,
          });
        }
        return compiled(data);
      };
    },
  };
}
