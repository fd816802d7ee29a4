import type { SearchStrategy } from './define.js';
import { ConstraintViolationError, typeViolation, violation, type Violation } from './errors.js';
import { parseId, resolveIri } from './iri.js';
import type { Comparison, Condition, OrderBy } from './persistence.js';
import { listValues, type Query, type QueryValue } from './query.js';
import type { FilterMetadata, FilterTarget, Registry, ResourceMetadata } from './registry.js';

/**
 * API Platform's filters, declared once per resource (define.ts) and read here three ways: the
 * query string becomes conditions and an ordering (persistence turns them into SQL), and each
 * filter describes its query parameters for `hydra:search` (serializer.ts) and for OpenAPI
 * (openapi.ts), in API Platform's order and spelling.
 *
 * Where API Platform silently ignores a value it cannot use, this engine answers 400 with a
 * violation naming the parameter: a filter that quietly returns everything is a wrong answer.
 */

/** Query parameter names of the filters that use one (API Platform's defaults). */
export const ORDER_PARAMETER = 'order';
export const EXISTS_PARAMETER = 'exists';
export const PROPERTIES_PARAMETER = 'properties';

const RANGE_OPERATORS = ['between', 'gt', 'gte', 'lt', 'lte'] as const;
const DATE_OPERATORS = ['before', 'strictly_before', 'after', 'strictly_after'] as const;
const RANGE_SQL: Readonly<Record<'gt' | 'gte' | 'lt' | 'lte', Comparison>> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };
const DATE_SQL: Readonly<Record<(typeof DATE_OPERATORS)[number], Comparison>> = {
  before: '<=',
  strictly_before: '<',
  after: '>=',
  strictly_after: '>',
};

/** One query parameter a filter accepts, as API Platform's `getDescription()` lists it. */
export interface ParameterDescription {
  readonly variable: string;
  /** The property the parameter filters on; null for the property filter. */
  readonly property: string | null;
  /** API Platform's description type: `string`, `int`, `float`, `bool`, `DateTimeInterface`. */
  readonly type: string;
  readonly isCollection: boolean;
  readonly schema: Readonly<Record<string, unknown>>;
  readonly description: string;
}

const descriptions = new WeakMap<ResourceMetadata, readonly ParameterDescription[]>();

/** Every parameter of every filter of the resource, in declaration order; built once. */
export function filterDescriptions(registry: Registry, resource: ResourceMetadata): readonly ParameterDescription[] {
  let out = descriptions.get(resource);
  if (!out) {
    out = resource.filters.flatMap((filter) => describe(registry, filter));
    descriptions.set(resource, out);
  }
  return out;
}

function scalarType(target: FilterTarget): { type: string; schema: Record<string, unknown> } {
  switch (target.kind) {
    case 'id':
    case 'integer':
      return { type: 'int', schema: { type: 'integer' } };
    case 'number':
      return { type: 'float', schema: { type: 'number' } };
    case 'boolean':
      return { type: 'bool', schema: { type: 'boolean' } };
    case 'enum':
      return { type: 'string', schema: { type: 'string', enum: [...(target.field?.values ?? [])] } };
    default:
      return { type: 'string', schema: { type: 'string' } };
  }
}

const STRATEGY_TEXT: Readonly<Record<SearchStrategy, string>> = {
  exact: 'equal to the value',
  partial: 'containing the value',
  start: 'starting with the value',
  end: 'ending with the value',
  word_start: 'with a word starting with the value',
  iexact: 'equal to the value, ignoring case',
  ipartial: 'containing the value, ignoring case',
  istart: 'starting with the value, ignoring case',
  iend: 'ending with the value, ignoring case',
  iword_start: 'with a word starting with the value, ignoring case',
};

function describe(registry: Registry, filter: FilterMetadata): ParameterDescription[] {
  if (filter.type === 'properties') {
    const example = `${PROPERTIES_PARAMETER}[]={propertyName}&${PROPERTIES_PARAMETER}[]={anotherPropertyName}`;
    return [
      {
        variable: `${PROPERTIES_PARAMETER}[]`,
        property: null,
        type: 'string',
        isCollection: true,
        schema: { type: 'array', items: { type: 'string' } },
        description: `Allows you to reduce the response to contain only the properties you need. Example: ${example}`,
      },
    ];
  }
  const p = filter.property;
  const target = filter.target;
  switch (filter.type) {
    case 'search': {
      if (target.kind === 'ref') {
        const path = registry.byShortName(target.field?.target as string)?.path ?? '';
        const description = `Items whose ${p} is this ${path}/{id} IRI (or identifier)`;
        return [
          { variable: p, property: p, type: 'string', isCollection: false, schema: { type: 'string' }, description },
          {
            variable: `${p}[]`,
            property: p,
            type: 'string',
            isCollection: true,
            schema: { type: 'array', items: { type: 'string' } },
            description: `${description}; any of the values`,
          },
        ];
      }
      const { type, schema } = scalarType(target);
      const description = `Items with ${p} ${STRATEGY_TEXT[filter.strategy]}`;
      const single: ParameterDescription = { variable: p, property: p, type, isCollection: false, schema, description };
      // Only the exact strategy lists the `[]` form, as API Platform's SearchFilter does.
      if (filter.strategy !== 'exact') return [single];
      return [
        single,
        {
          variable: `${p}[]`,
          property: p,
          type,
          isCollection: true,
          schema: { type: 'array', items: schema },
          description: `${description}; any of the values`,
        },
      ];
    }
    case 'range':
      return RANGE_OPERATORS.map((op) => ({
        variable: `${p}[${op}]`,
        property: p,
        type: 'string',
        isCollection: false,
        schema: { type: 'string' },
        description:
          op === 'between'
            ? `Items with ${p} between two numbers, inclusive: \`min..max\``
            : `Items with ${p} ${{ gt: '>', gte: '≥', lt: '<', lte: '≤' }[op]} the number`,
      }));
    case 'date':
      return DATE_OPERATORS.map((op) => ({
        variable: `${p}[${op}]`,
        property: p,
        type: 'DateTimeInterface',
        isCollection: false,
        schema: { type: 'string' },
        description: `Items with ${p} ${op.replace('_', ' ')} the date (ISO 8601; no offset means UTC)`,
      }));
    case 'exists':
      return [
        {
          variable: `${EXISTS_PARAMETER}[${p}]`,
          property: p,
          type: 'bool',
          isCollection: false,
          schema: { type: 'boolean' },
          description: `Items that have (true) or lack (false) a ${p}`,
        },
      ];
    case 'order':
      return [
        {
          variable: `${ORDER_PARAMETER}[${p}]`,
          property: p,
          type: 'string',
          isCollection: false,
          schema: { type: 'string', enum: ['asc', 'desc'] },
          description: `Sort by ${p}`,
        },
      ];
  }
}

/** The numbers of a range bound: a finite decimal, as PHP's is_numeric accepts them. */
function parseNumber(raw: string): number | undefined {
  if (!/^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * A date filter value as the stored form (ISO 8601 UTC with milliseconds), or undefined when it
 * is not a date: `2026-11-23`, `2026-11-23T10:00`, `2026-11-23 10:00:00+01:00`, … A value
 * without an offset is UTC (API Platform uses the server's zone, UTC by default).
 */
export function parseDate(raw: string): string | undefined {
  const m = DATE.exec(raw.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone] = m;
  if (Number(y) < 1) return undefined;
  const offset =
    !zone || zone.toUpperCase() === 'Z' ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const iso = `${y}-${mo}-${d}T${h}:${mi}:${s}.${(frac + '000').slice(0, 3)}${offset}`;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return undefined;
  // Reject dates that JavaScript rolls over (2026-02-30 → March 2).
  const probe = new Date(`${y}-${mo}-${d}T00:00:00Z`);
  if (Number.isNaN(probe.getTime()) || probe.getUTCDate() !== Number(d) || probe.getUTCMonth() + 1 !== Number(mo))
    return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  return date.toISOString();
}

/** ExistsFilter's accepted values: `true`, `1` and the empty string mean present; `false`, `0` absent. */
function parseBoolean(raw: string): boolean | undefined {
  if (raw === 'true' || raw === '1' || raw === '') return true;
  if (raw === 'false' || raw === '0') return false;
  return undefined;
}

/** A map-shaped parameter (`kaufpreis[gte]=…`, `exists[x]=…`): its string entries. */
function entries(value: QueryValue | undefined): [string, string][] {
  if (value === undefined || typeof value === 'string' || Array.isArray(value)) return [];
  return Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string');
}

/** A value no stored string can equal (a NUL, broken UTF-16): matches nothing, never sent to the database. */
const unstorable = (value: string): boolean =>
  value.includes('\u0000') || !(value as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * The conditions of the declared filters present in the query. Every unusable value of a declared
 * filter is collected as a violation (400); parameters no filter declares are ignored.
 */
export function filterConditions(registry: Registry, resource: ResourceMetadata, query: Query): Condition[] {
  const conditions: Condition[] = [];
  const violations: Violation[] = [];
  for (const filter of resource.filters) {
    if (filter.type === 'properties' || filter.type === 'order') continue;
    const target = filter.target;
    const p = filter.property;
    switch (filter.type) {
      case 'search': {
        const raw = query.get(p);
        if (raw === undefined) continue;
        const values = listValues(raw);
        if (values.length === 0) {
          violations.push(
            typeViolation(p, `This value should be of type ${target.kind === 'integer' ? 'int' : 'string'}.`),
          );
          continue;
        }
        if (filter.strategy !== 'exact') {
          const usable = values.filter((v) => !unstorable(v));
          conditions.push(
            usable.length
              ? { op: 'match', target, strategy: filter.strategy, values: usable }
              : { op: 'in', target, values: [] },
          );
          continue;
        }
        const typed: unknown[] = [];
        for (const v of values) {
          const r = exactValue(registry, target, v);
          if (r.violation) violations.push({ ...r.violation, propertyPath: p });
          else if (r.matches) typed.push(r.value);
        }
        conditions.push({ op: 'in', target, values: typed });
        continue;
      }
      case 'range':
        for (const [op, v] of entries(query.get(p))) {
          if (!(RANGE_OPERATORS as readonly string[]).includes(op)) continue;
          const path = `${p}[${op}]`;
          if (op === 'between') {
            const parts = v.split('..');
            const bounds = parts.length === 2 ? parts.map(parseNumber) : [];
            if (bounds.length !== 2 || bounds.some((b) => b === undefined)) {
              violations.push(typeViolation(path, 'This value should be two numbers separated by "..".'));
              continue;
            }
            conditions.push(bound(target, '>=', bounds[0] as number), bound(target, '<=', bounds[1] as number));
            continue;
          }
          const n = parseNumber(v);
          if (n === undefined) violations.push(violation(path, 'type', { type: 'float' }));
          else conditions.push(bound(target, RANGE_SQL[op as keyof typeof RANGE_SQL], n));
        }
        continue;
      case 'date':
        for (const [op, v] of entries(query.get(p))) {
          if (!(DATE_OPERATORS as readonly string[]).includes(op)) continue;
          const date = parseDate(v);
          if (date === undefined) violations.push(violation(`${p}[${op}]`, 'dateTime'));
          else conditions.push({ op: DATE_SQL[op as keyof typeof DATE_SQL], target, values: [date] });
        }
        continue;
      case 'exists': {
        const raw = entries(query.get(EXISTS_PARAMETER)).find(([name]) => name === p);
        if (!raw) continue;
        const present = parseBoolean(raw[1]);
        if (present === undefined) violations.push(violation(`${EXISTS_PARAMETER}[${p}]`, 'type', { type: 'bool' }));
        else conditions.push({ op: present ? 'notNull' : 'null', target, values: [] });
        continue;
      }
    }
  }
  if (violations.length) throw new ConstraintViolationError(violations, 'request');
  return conditions;
}

const INT_MIN = -2_147_483_648;
const INT_MAX = 2_147_483_647;

/**
 * A range bound as a condition. An integer column is compared with an integer, so that no
 * dialect has to convert a fraction or an out-of-range number for the column (PostgreSQL would
 * refuse both): x ≥ 1.5 is x ≥ 2, x < 1.5 is x < 2, and a bound beyond the column's range
 * matches everything or nothing.
 */
function bound(target: FilterTarget, op: Comparison, n: number): Condition {
  if (target.kind !== 'integer' && target.kind !== 'id') return { op, target, values: [n] };
  const whole = op === '>=' || op === '<' ? Math.ceil(n) : Math.floor(n);
  const below = whole < INT_MIN;
  const above = whole > INT_MAX;
  if (!below && !above) return { op, target, values: [whole] };
  // Every stored integer lies between the limits: the bound holds for all of them or for none.
  const holdsForAll = (op === '>=' || op === '>') === below;
  return holdsForAll ? { op: 'notNull', target, values: [] } : { op: 'in', target, values: [] };
}

type ExactValue = { violation?: Violation; matches?: boolean; value?: unknown };

/** An exact filter value as the column's type; a value no row can hold matches nothing. */
function exactValue(registry: Registry, target: FilterTarget, v: string): ExactValue {
  switch (target.kind) {
    case 'enum':
      return target.field?.values?.includes(v) ? { matches: true, value: v } : { violation: violation('', 'choice') };
    case 'id':
    case 'integer':
      if (!/^-?\d{1,15}$/.test(v)) return { violation: violation('', 'type', { type: 'int' }) };
      return Number(v) < INT_MIN || Number(v) > INT_MAX ? { matches: false } : { matches: true, value: Number(v) };
    case 'number': {
      const n = parseNumber(v);
      return n === undefined ? { violation: violation('', 'type', { type: 'float' }) } : { matches: true, value: n };
    }
    case 'boolean': {
      const b = v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : undefined;
      return b === undefined ? { violation: violation('', 'type', { type: 'bool' }) } : { matches: true, value: b };
    }
    case 'ref': {
      // An IRI or a bare id. A well-formed IRI (or id) of a row that does not exist matches nothing.
      const bare = parseId(v);
      if (bare !== undefined) return { matches: true, value: bare };
      if (/^\d+$/.test(v)) return { matches: false };
      const expected = registry.byShortName(target.field?.target as string) as ResourceMetadata;
      const r = resolveIri(registry, expected, v);
      if (r.ok) return { matches: true, value: r.id };
      if (r.reason === 'not_found') return { matches: false };
      return { violation: typeViolation('', `Invalid IRI "${v}".`) };
    }
    default:
      return unstorable(v) ? { matches: false } : { matches: true, value: v };
  }
}

/**
 * `order[property]=asc|desc` (case-insensitive) on declared properties, in the order given, then
 * the identifier ascending as the last key so that pages never overlap. An unknown direction on
 * a declared property is a violation; undeclared properties are ignored.
 */
export function ordering(resource: ResourceMetadata, query: Query): OrderBy[] {
  const order: OrderBy[] = [];
  const violations: Violation[] = [];
  for (const [name, direction] of entries(query.get(ORDER_PARAMETER))) {
    const filter = resource.filters.find((f) => f.type === 'order' && f.property === name);
    if (!filter || filter.type !== 'order') continue;
    const dir = direction.toLowerCase();
    if (dir !== 'asc' && dir !== 'desc') {
      violations.push(violation(`${ORDER_PARAMETER}[${name}]`, 'choice'));
      continue;
    }
    if (!order.some((o) => o.target === filter.target))
      order.push({ target: filter.target, direction: dir, nullable: filter.target.nullable });
  }
  if (violations.length) throw new ConstraintViolationError(violations, 'request');
  if (!order.some((o) => o.target.column === resource.idField.column && !o.target.ratio))
    order.push({ target: resource.idField, direction: 'asc', nullable: false });
  return order;
}

/**
 * The fields `properties[]=…` asks for, when the resource declares the property filter; undefined
 * means all. Unknown names are ignored; nested selections (`properties[x][]=…`) are not supported
 * because relations are always IRIs here.
 */
export function selectedProperties(resource: ResourceMetadata, query: Query): ReadonlySet<string> | undefined {
  if (!resource.filters.some((f) => f.type === 'properties')) return undefined;
  const raw = query.get(PROPERTIES_PARAMETER);
  if (raw === undefined || typeof raw === 'string') return undefined;
  return new Set(listValues(raw));
}
