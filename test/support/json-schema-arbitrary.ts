import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas of an OpenAPI 3.1 document: `schemaArbitrary` makes
 * values a schema accepts (as far as JSON Schema can say: cross-field rules such as "give this or
 * url" are not expressed), `hostileValue` and `mutateValue` make the values it must refuse. Only
 * the vocabulary the API's documents use is understood: `$ref` to `#/…`, `type` (one or a list),
 * `enum`/`const`, `allOf`/`anyOf`/`oneOf`, objects (`properties`, `required`,
 * `additionalProperties`), arrays (`items`, `minItems`, `maxItems`, `uniqueItems`), strings
 * (`minLength`, `maxLength`, `pattern`, formats uuid, date-time, date, uri/url, email) and numbers
 * (`minimum`, `maximum`, exclusive bounds, `multipleOf`). Anything else generates any JSON value.
 */

export type JsonSchema = boolean | { [keyword: string]: unknown };

export interface SchemaArbitraryOptions {
  /** The document `$ref`s point into (`#/components/schemas/…`). */
  document?: unknown;
  /**
   * Values for properties by name, mixed in with what their schema generates (e.g. the id of a
   * real organization for `organization_id`, so a request reaches its handler).
   */
  named?: Record<string, fc.Arbitrary<unknown>>;
  /** How often (0–1) a named property takes the named value instead of its schema's; default 0.8. */
  namedBias?: number;
  /**
   * Values for string formats, replacing the built-in ones (e.g. URIs that never leave the machine,
   * for a test that must not fetch from the internet).
   */
  formats?: Record<string, fc.Arbitrary<string>>;
  /** Nesting beyond which optional properties are left out and arrays kept empty; default 6. */
  maxDepth?: number;
  /** Longest string generated when the schema allows longer; default 40. */
  maxStringLength?: number;
  /** Most array items generated when the schema allows more; default 3. */
  maxItems?: number;
}

type Schema = { [keyword: string]: unknown };

const isObject = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The schema a local `$ref` (`#/a/b`, JSON Pointer escapes `~0`/`~1`) points at. */
export function resolveRef(document: unknown, ref: string): JsonSchema {
  if (!ref.startsWith('#')) throw new Error(`only local $refs are supported: ${ref}`);
  let at: unknown = document;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isObject(at) || !(key in at)) throw new Error(`unresolvable $ref ${ref}`);
    at = at[key];
  }
  if (typeof at !== 'boolean' && !isObject(at)) throw new Error(`$ref ${ref} is not a schema`);
  return at as JsonSchema;
}

/** `schema` with its `$ref` chain followed (sibling keywords of a `$ref` are kept, the `$ref`'s target winning none of them). */
export function deref(document: unknown, schema: JsonSchema, seen: Set<string> = new Set()): JsonSchema {
  if (!isObject(schema) || typeof schema.$ref !== 'string') return schema;
  if (seen.has(schema.$ref)) throw new Error(`$ref cycle through ${schema.$ref}`);
  seen.add(schema.$ref);
  const { $ref, ...siblings } = schema;
  const target = deref(document, resolveRef(document, $ref as string), seen);
  if (Object.keys(siblings).length === 0 || typeof target === 'boolean') return target;
  return { ...target, ...siblings };
}

/** The types a schema allows, from `type` (one or a list) or, without it, from its other keywords. */
function typesOf(schema: Schema): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type as string[];
  const types: string[] = [];
  if (schema.properties || schema.additionalProperties !== undefined || schema.required) types.push('object');
  if (schema.items) types.push('array');
  if (schema.minLength !== undefined || schema.maxLength !== undefined || schema.pattern || schema.format) types.push('string');
  if (schema.minimum !== undefined || schema.maximum !== undefined) types.push('number');
  if (schema.nullable === true) types.push('null');
  return types;
}

const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/**
 * Strings of `min`–`max` UTF-16 units (what zod's `.min`/`.max` count), mostly printable ASCII,
 * sometimes any grapheme (emoji, combining marks, astral characters).
 */
function plainString(min: number, max: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ minLength: min, maxLength: max }) },
    { weight: 1, arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'grapheme' }).filter((value) => value.length <= max) },
  );
}

/** An ISO 8601 timestamp with a `Z` or a numeric offset (years 1970–2100). */
const dateTime = fc
  .tuple(
    fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }),
    fc.constantFrom('Z', '+00:00', '+05:30', '-08:00'),
  )
  .map(([date, zone]) => date.toISOString().replace('Z', zone));

const date = fc
  .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));

function stringArbitrary(schema: Schema, options: Pick<SchemaArbitraryOptions, 'formats'> & { maxStringLength: number }): fc.Arbitrary<string> {
  const min = num(schema.minLength) ?? 0;
  const max = Math.max(min, Math.min(num(schema.maxLength) ?? Number.POSITIVE_INFINITY, Math.max(min, options.maxStringLength)));
  const fits = (value: string) => value.length >= min && value.length <= (num(schema.maxLength) ?? Number.POSITIVE_INFINITY);
  let arbitrary: fc.Arbitrary<string> | undefined = typeof schema.format === 'string' ? options.formats?.[schema.format] : undefined;
  if (!arbitrary)
    switch (schema.format) {
      case 'uuid':
        arbitrary = fc.uuid();
        break;
      case 'date-time':
        arbitrary = dateTime;
        break;
      case 'date':
        arbitrary = date;
        break;
      case 'uri':
      case 'url':
        arbitrary = fc.webUrl({ withQueryParameters: true, withFragments: true });
        break;
      case 'email':
        arbitrary = fc.emailAddress();
        break;
    }
  if (!arbitrary && typeof schema.pattern === 'string') {
    try {
      arbitrary = fc.stringMatching(new RegExp(schema.pattern));
    } catch {
      // A pattern fast-check cannot invert (lookaheads…): plain strings, mostly refused, which is fine for a fuzzer.
    }
  }
  if (!arbitrary) return plainString(min, max);
  // Formats and patterns do not know the length bounds: a value that does not fit is replaced by a plain string that does.
  return arbitrary.chain((value) => (fits(value) ? fc.constant(value) : plainString(min, max)));
}

function numberArbitrary(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  let min = num(schema.minimum);
  let max = num(schema.maximum);
  const exclusiveMin = num(schema.exclusiveMinimum);
  const exclusiveMax = num(schema.exclusiveMaximum);
  const step = integer ? 1 : Number.EPSILON * 1024;
  if (exclusiveMin !== undefined) min = Math.max(min ?? Number.NEGATIVE_INFINITY, exclusiveMin + step);
  if (exclusiveMax !== undefined) max = Math.min(max ?? Number.POSITIVE_INFINITY, exclusiveMax - step);
  const multipleOf = num(schema.multipleOf);
  if (integer || multipleOf !== undefined) {
    const unit = multipleOf ?? 1;
    const lo = Math.ceil((min ?? -1_000_000) / unit);
    const hi = Math.floor((max ?? 1_000_000) / unit);
    const clamp = (n: number) => Math.max(Number.MIN_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, n));
    return fc.integer({ min: clamp(lo), max: clamp(Math.max(lo, hi)) }).map((n) => n * unit);
  }
  return fc.double({ min: min ?? -1e9, max: max ?? 1e9, noNaN: true, noDefaultInfinity: true });
}

interface Context {
  options: SchemaArbitraryOptions & { maxDepth: number; maxStringLength: number; maxItems: number; namedBias: number };
  depth: number;
  refs: string[];
}

function build(input: JsonSchema, context: Context): fc.Arbitrary<unknown> {
  const { options } = context;
  if (input === true || (isObject(input) && Object.keys(input).length === 0)) return fc.jsonValue({ maxDepth: 2 });
  if (input === false) return fc.constant(undefined);
  let schema = input as Schema;
  let refs = context.refs;
  if (typeof schema.$ref === 'string') {
    // A recursive schema stops recursing once deep enough: `null` is refused or accepted, either is fine.
    if (refs.filter((r) => r === schema.$ref).length >= 2 || context.depth > options.maxDepth + 2) return fc.constant(null);
    refs = [...refs, schema.$ref];
    schema = deref(options.document, schema) as Schema;
    if (typeof schema === 'boolean') return build(schema, context);
  }
  const next: Context = { ...context, depth: context.depth + 1, refs };
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    return build(mergeAll([rest, ...(allOf as JsonSchema[]).map((s) => deref(options.document, s))]), context);
  }
  for (const keyword of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[keyword])) {
      const { [keyword]: choices, ...rest } = schema;
      const base = Object.keys(rest).filter((k) => k !== 'description' && k !== 'example' && k !== 'default').length ? rest : {};
      return fc.oneof(
        ...(choices as JsonSchema[]).map((choice) => build(Object.keys(base).length ? mergeAll([base, deref(options.document, choice)]) : choice, next)),
      );
    }
  }
  const types = typesOf(schema);
  if (types.length === 0) return fc.jsonValue({ maxDepth: 2 });
  const byType = types.map((type) => typeArbitrary(type, schema, next));
  return byType.length === 1 ? byType[0]! : fc.oneof(...byType);
}

/** `allOf`: properties and required lists merged, other keywords the later schema's. */
function mergeAll(schemas: JsonSchema[]): Schema {
  const merged: Schema = {};
  for (const schema of schemas) {
    if (!isObject(schema)) continue;
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'properties' && isObject(merged.properties)) merged.properties = { ...merged.properties, ...(value as Schema) };
      else if (key === 'required' && Array.isArray(merged.required)) merged.required = [...new Set([...(merged.required as string[]), ...(value as string[])])];
      else merged[key] = value;
    }
  }
  return merged;
}

function typeArbitrary(type: string, schema: Schema, context: Context): fc.Arbitrary<unknown> {
  const { options } = context;
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return numberArbitrary(schema, true);
    case 'number':
      return numberArbitrary(schema, false);
    case 'string':
      return stringArbitrary(schema, options);
    case 'array': {
      const min = num(schema.minItems) ?? 0;
      const max = context.depth > options.maxDepth ? min : Math.max(min, Math.min(num(schema.maxItems) ?? options.maxItems, options.maxItems));
      const items = schema.items === undefined ? fc.jsonValue({ maxDepth: 1 }) : build(schema.items as JsonSchema, context);
      return schema.uniqueItems
        ? fc.uniqueArray(items, { minLength: min, maxLength: max, selector: (v) => JSON.stringify(v) })
        : fc.array(items, { minLength: min, maxLength: max });
    }
    case 'object':
      return objectArbitrary(schema, context);
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function objectArbitrary(schema: Schema, context: Context): fc.Arbitrary<Record<string, unknown>> {
  const { options } = context;
  const properties = isObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const tooDeep = context.depth > options.maxDepth;
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (tooDeep && !required.has(name)) continue;
    if (isObject(property) && property.readOnly === true) continue;
    const own = build(property, context);
    const named = options.named?.[name];
    const bias = Math.round(options.namedBias * 100);
    record[name] = named && bias > 0 ? fc.oneof({ weight: bias, arbitrary: named }, { weight: Math.max(0, 100 - bias), arbitrary: own }) : own;
  }
  const requiredKeys = Object.keys(record).filter((name) => required.has(name));
  const fixed = fc.record(record, { requiredKeys });
  const extra = schema.additionalProperties;
  if (tooDeep || extra === false || extra === undefined || Object.keys(properties).length > 0) {
    // Extra keys only where the schema is a map (no named properties): a fuzzer sends unknown keys on purpose elsewhere.
    if (!(isObject(extra) || extra === true) || tooDeep) return fixed;
  }
  const values = extra === true ? fc.jsonValue({ maxDepth: 1 }) : build(extra as JsonSchema, context);
  const keys = fc.string({ minLength: 1, maxLength: 12 }).filter((key) => !(key in properties) && !['__proto__', 'constructor', 'prototype'].includes(key));
  const minProperties = num(schema.minProperties) ?? 0;
  const maxProperties = Math.max(minProperties, Math.min(num(schema.maxProperties) ?? 3, 3));
  return fc
    .tuple(fixed, fc.dictionary(keys, values, { minKeys: Math.max(0, minProperties - Object.keys(properties).length), maxKeys: maxProperties }))
    .map(([named, more]) => ({ ...more, ...named }));
}

/** Values `schema` (resolved in `options.document`) accepts, as far as its keywords say. */
export function schemaArbitrary(schema: JsonSchema, options: SchemaArbitraryOptions = {}): fc.Arbitrary<unknown> {
  return build(schema, {
    options: { maxDepth: 6, maxStringLength: 40, maxItems: 3, namedBias: 0.8, ...options },
    depth: 0,
    refs: [],
  });
}

// ——— hostile values ———

/** Strings a careless boundary mishandles: control characters, NUL, lone surrogates, huge, SQL/HTML-ish, path-ish. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\u0001\u0002\u0003\u0007\b\t\n\u000b\f\r\u001b[31m',
    '\r\nX-Injected: 1',
    '\ud800',
    '\udfff\ud800',
    '\u202e\u200b\ufeff',
    "' OR 1=1 --",
    '"; DROP TABLE users; --',
    '<script>alert(1)</script>',
    '../../../../etc/passwd',
    '%00%2e%2e%2f',
    `\${jndi:ldap://x}`,
    '{{7*7}}',
    'NaN',
    'Infinity',
    '-0',
    'null',
    'true',
    '1e999',
    '__proto__',
    'constructor',
    '😀'.repeat(100),
  ),
  fc.integer({ min: 10_000, max: 100_000 }).map((n) => 'x'.repeat(n)),
  fc.string({ minLength: 1, maxLength: 20, unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)) }),
  fc.string({ unit: 'binary', maxLength: 30 }),
);

/** Numbers at the edges: negative, zero, fractional, beyond int32/int64/safe integers, the largest double. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(-1, 0, -0, 0.5, -0.000001, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 63, -(2 ** 63), 1e21, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 5e-324),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** `levels` arrays or objects nested in each other. */
export const nested = (levels: number, kind: 'array' | 'object' = 'array'): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
};

/** Keys that pollute prototypes where objects are merged carelessly (sent as own properties of the JSON). */
export const pollutionKeys = ['__proto__', 'constructor', 'prototype'] as const;

/** An object whose own keys include `key` (JSON.parse makes `__proto__` an own property, as the server's parser sees it). */
export const withOwnKey = (value: Record<string, unknown>, key: string, item: unknown): Record<string, unknown> => {
  const copy = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  Object.defineProperty(copy, key, { value: item, enumerable: true, configurable: true, writable: true });
  return copy;
};

/** Any value of the wrong kind, or an edge of the right one. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  hostileNumber,
  fc.constantFrom(null, true, false, [], {}, [null], { '': '' }),
  fc.constantFrom(nested(200), nested(70, 'object'), nested(1000)),
  fc.constantFrom(...pollutionKeys).map((key) => withOwnKey({}, key, { polluted: true, isAdmin: true, role: 'owner' })),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Every path (property keys and array indices) to a value inside `value`, the root included (as []). */
export function pathsOf(value: unknown, prefix: (string | number)[] = [], into: (string | number)[][] = []): (string | number)[][] {
  into.push(prefix);
  if (Array.isArray(value)) for (const [index, item] of value.entries()) pathsOf(item, [...prefix, index], into);
  else if (isObject(value)) for (const [key, item] of Object.entries(value)) pathsOf(item, [...prefix, key], into);
  return into;
}

/** A deep copy of `value` with the value at `path` replaced (the root when `path` is empty). */
export function replaceAt(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, index) => (index === head ? replaceAt(item, rest, replacement) : item));
  if (isObject(value)) {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const next = key === head ? replaceAt(item, rest, replacement) : item;
      Object.defineProperty(copy, key, { value: next, enumerable: true, configurable: true, writable: true });
    }
    return copy;
  }
  return value;
}

export type Mutation = 'replace' | 'unknown-field' | 'pollution-key' | 'drop-field';

/**
 * `value` with one hostile change: a value somewhere replaced by a hostile one, an unknown field
 * added, a prototype-pollution key added, or a field removed.
 */
export function mutateValue(value: unknown): fc.Arbitrary<{ mutation: Mutation; value: unknown }> {
  const paths = pathsOf(value);
  const objectPaths = paths.filter((path) => isObject(path.reduce<unknown>((at, key) => (at as Record<string, unknown>)[key as string], value)));
  const at = (path: (string | number)[]) => path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key as string], value);
  const choices: fc.Arbitrary<{ mutation: Mutation; value: unknown }>[] = [
    fc.tuple(fc.constantFrom(...paths), hostileValue).map(([path, hostile]) => ({ mutation: 'replace' as const, value: replaceAt(value, path, hostile) })),
  ];
  if (objectPaths.length) {
    choices.push(
      fc
        .tuple(fc.constantFrom(...objectPaths), fc.constantFrom('zz_unknown', 'id', 'created_at', 'role', 'is_admin', 'organization'), hostileValue)
        .map(([path, key, item]) => ({
          mutation: 'unknown-field' as const,
          value: replaceAt(value, path, withOwnKey(at(path) as Record<string, unknown>, key, item)),
        })),
      fc.tuple(fc.constantFrom(...objectPaths), fc.constantFrom(...pollutionKeys)).map(([path, key]) => ({
        mutation: 'pollution-key' as const,
        value: replaceAt(value, path, withOwnKey(at(path) as Record<string, unknown>, key, { polluted: true, role: 'owner', toString: 'x' })),
      })),
    );
    const fieldPaths = paths.filter((path) => path.length > 0 && typeof path[path.length - 1] === 'string');
    if (fieldPaths.length) {
      choices.push(
        fc.constantFrom(...fieldPaths).map((path) => {
          const parent = at(path.slice(0, -1)) as Record<string, unknown>;
          const copy = { ...parent };
          delete copy[path[path.length - 1] as string];
          return { mutation: 'drop-field' as const, value: replaceAt(value, path.slice(0, -1), copy) };
        }),
      );
    }
  }
  return fc.oneof(...choices);
}
