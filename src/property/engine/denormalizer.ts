import { ForbiddenError } from '../../platform/errors/app-error.js';
import type { Item, OperationName, Principal } from './define.js';
import { ConstraintViolationError, typeViolation, violation, type Violation } from './errors.js';
import { resolveIri } from './iri.js';
import { existingIds, valueTaken, type AnyDb } from './persistence.js';
import type { FieldMetadata, Registry, ResourceMetadata } from './registry.js';

/** Symfony's "html5" e-mail pattern: a dotted domain, no quoted local parts. */
const EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/;

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'string',
  integer: 'int',
  number: 'float',
  boolean: 'bool',
  enum: 'string',
};

export interface DenormalizeContext {
  readonly db: AnyDb;
  readonly registry: Registry;
  readonly resource: ResourceMetadata;
  readonly operation: Extract<OperationName, 'post' | 'put' | 'patch'>;
  readonly principal: Principal | null;
  /** The stored item, for put and patch. */
  readonly previous: Item | undefined;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  return typeof v;
}

/**
 * Turns a request body into the complete new state of the item's writable fields: types and IRIs
 * first (API Platform's deserializer), then property-level security (403), then the constraints
 * of each field (400 with every violation at once).
 */
export async function denormalize(body: unknown, ctx: DenormalizeContext): Promise<Record<string, unknown>> {
  const { resource, operation, previous, principal } = ctx;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ConstraintViolationError([typeViolation('', 'This value should be of type object.')]);
  }
  const input = body as Record<string, unknown>;
  const violations: Violation[] = [];
  const invalid = new Set<string>();
  const given: Record<string, unknown> = {};
  const refChecks: { field: FieldMetadata; target: ResourceMetadata; id: number; iri: string }[] = [];

  for (const field of resource.fields) {
    if (!field.writable || field.kind === 'id' || field.kind === 'secret' || !Object.hasOwn(input, field.name))
      continue;
    const raw = input[field.name];
    if (raw === null) {
      given[field.name] = null;
      continue;
    }
    const problem = checkType(field, raw);
    if (problem) {
      violations.push(problem);
      invalid.add(field.name);
      continue;
    }
    if (field.kind === 'ref') {
      const target = ctx.registry.byShortName(field.target as string) as ResourceMetadata;
      const resolved = resolveIri(ctx.registry, target, raw as string);
      if (!resolved.ok) {
        violations.push(
          typeViolation(
            field.name,
            resolved.reason === 'invalid'
              ? `Invalid IRI "${raw as string}".`
              : `Item not found for "${raw as string}".`,
          ),
        );
        invalid.add(field.name);
        continue;
      }
      refChecks.push({ field, target, id: resolved.id, iri: raw as string });
      given[field.name] = resolved.id;
      continue;
    }
    given[field.name] = raw;
  }

  // Existence of referenced items, one query per target resource.
  const byTarget = new Map<ResourceMetadata, typeof refChecks>();
  for (const check of refChecks) byTarget.set(check.target, [...(byTarget.get(check.target) ?? []), check]);
  for (const [target, checks] of byTarget) {
    const found = await existingIds(
      ctx.db,
      target,
      checks.map((c) => c.id),
    );
    for (const c of checks) {
      if (!found.has(c.id)) {
        violations.push(typeViolation(c.field.name, `Item not found for "${c.iri}".`));
        invalid.add(c.field.name);
      }
    }
  }

  // The complete new state: what was given, else (post) the default, (put) the default unless the
  // field keeps its value on replace, (patch) the stored value.
  const state: Record<string, unknown> = {};
  for (const field of resource.fields) {
    if (!field.writable || field.kind === 'id' || field.kind === 'secret') continue;
    if (Object.hasOwn(given, field.name)) state[field.name] = given[field.name];
    else if (operation === 'patch' || (operation === 'put' && field.keepOnReplace))
      state[field.name] = previous?.[field.name] ?? null;
    else state[field.name] = field.default ? (field.default({ principal }) ?? null) : null;
  }

  for (const field of resource.fields) {
    if (!(field.name in state) || invalid.has(field.name)) continue;
    violations.push(...checkConstraints(field, state[field.name]));
  }

  for (const field of resource.fields) {
    if (!field.unique || invalid.has(field.name) || !Object.hasOwn(given, field.name)) continue;
    const value = state[field.name];
    if (value === null || value === undefined || value === previous?.[field.name]) continue;
    if (violations.some((v) => v.propertyPath === field.name)) continue;
    if (await valueTaken(ctx.db, resource, field, value, previous?.id))
      violations.push(violation(field.name, 'unique'));
  }

  if (violations.length) throw new ConstraintViolationError(violations);

  for (const field of resource.fields) {
    if (!field.writeAccess || !(field.name in state)) continue;
    const baseline = previous ? previous[field.name] : field.default ? (field.default({ principal }) ?? null) : null;
    const value = state[field.name];
    if (value === baseline) continue;
    if (!field.writeAccess({ principal, operation, value, previous })) {
      throw new ForbiddenError('Access Denied.', { details: { field: field.name } });
    }
  }
  return state;
}

function checkType(field: FieldMetadata, raw: unknown): Violation | undefined {
  switch (field.kind) {
    case 'string':
    case 'enum':
      return typeof raw === 'string' ? undefined : violation(field.name, 'type', { type: 'string' });
    case 'integer':
      return typeof raw === 'number' && Number.isInteger(raw)
        ? undefined
        : violation(field.name, 'type', { type: 'int' });
    case 'number':
      return typeof raw === 'number' ? undefined : violation(field.name, 'type', { type: 'float' });
    case 'boolean':
      return typeof raw === 'boolean' ? undefined : violation(field.name, 'type', { type: 'bool' });
    case 'ref':
      if (typeof raw === 'string') return undefined;
      if (typeof raw === 'object')
        return typeViolation(
          field.name,
          `Nested documents for attribute "${field.name}" are not allowed. Use IRIs instead.`,
        );
      return typeViolation(
        field.name,
        `The type of the "${field.name}" attribute must be "string" (an IRI), "${jsonType(raw)}" given.`,
      );
    default:
      return violation(field.name, 'type', { type: TYPE_NAMES[field.kind] ?? field.kind });
  }
}

function checkConstraints(field: FieldMetadata, value: unknown): Violation[] {
  const out: Violation[] = [];
  const blank = value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
  if (field.required && blank) {
    out.push(violation(field.name, typeof value === 'string' || field.kind === 'string' ? 'notBlank' : 'notNull'));
    return out;
  }
  if (value === null || value === undefined) return out;
  if (typeof value === 'string') {
    // NUL is refused by PostgreSQL and lone surrogates cannot be stored as UTF-8: refuse both here.
    if (value.includes('\u0000') || !(value as unknown as { isWellFormed(): boolean }).isWellFormed())
      out.push(violation(field.name, 'invalidCharacters'));
    if (field.maxLength !== undefined && [...value].length > field.maxLength)
      out.push(violation(field.name, 'tooLong', { limit: field.maxLength }));
    if (field.format === 'email' && !EMAIL.test(value)) out.push(violation(field.name, 'email'));
    if (field.kind === 'enum' && !field.values?.includes(value)) out.push(violation(field.name, 'choice'));
  }
  if (typeof value === 'number') {
    if (field.minimum === 0 && value < 0) out.push(violation(field.name, 'positiveOrZero'));
    else if (field.minimum !== undefined && value < field.minimum)
      out.push(violation(field.name, 'greaterThanOrEqual', { compared_value: field.minimum }));
    if (field.maximum !== undefined && value > field.maximum)
      out.push(violation(field.name, 'lessThanOrEqual', { compared_value: field.maximum }));
  }
  return out;
}
