import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { deref, type JsonSchema } from './json-schema-arbitrary.ts';

// ajv's JSON Schema 2020-12 build (OpenAPI 3.1's dialect) and its formats, loaded as the CommonJS they are.
const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020.js').default as typeof import('ajv').default;
const addFormats = require('ajv-formats').default as (ajv: InstanceType<typeof Ajv2020>) => void;

/** The extension the document puts on a field whose value names server state (src/core/zod.ts CHECKED_BY_SERVER). */
export const CHECKED_BY_SERVER = 'x-checked-by-server';

type Schema = { [keyword: string]: unknown };
const isObject = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `/`-separated JSON Pointer of `parts` (escapes `~` and `/`). */
export const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/**
 * The served OpenAPI document as a validator: every schema is checked by ajv (2020-12, formats
 * asserted) in place, by its JSON Pointer in the document, so its `$ref`s resolve as they do for a client.
 */
export class ContractValidator {
  private readonly ajv: InstanceType<typeof Ajv2020>;
  /** Query, path and header values arrive as text: coerced to the parameter's type first, as a server reads them. */
  private readonly parameters: InstanceType<typeof Ajv2020>;
  private readonly compiled = new Map<string, ValidateFunction>();
  readonly document: unknown;
  constructor(document: unknown) {
    this.document = document;
    const make = (coerceTypes: false | 'array') => {
      const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, coerceTypes });
      addFormats(ajv);
      ajv.addSchema(document as object, 'openapi');
      return ajv;
    };
    this.ajv = make(false);
    this.parameters = make('array');
  }

  /** ajv's errors for `value` against the schema at `path` (a JSON Pointer into the document), or [] when it conforms. */
  problems(path: string, value: unknown, { coerce = false } = {}): ErrorObject[] {
    const key = `${coerce}:${path}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = (coerce ? this.parameters : this.ajv).compile({ $ref: `openapi#${path}` });
      this.compiled.set(key, validate);
    }
    return validate(structuredClone(value)) ? [] : [...(validate.errors ?? [])];
  }

  /**
   * The schemas a value at `path` (an issue's path, keys and indexes) inside `schema` may be
   * checked by: every branch of `allOf`/`anyOf`/`oneOf` that has it, `$ref`s followed.
   */
  schemasAt(schema: JsonSchema, path: readonly (string | number)[]): Schema[] {
    const resolved = deref(this.document, schema);
    if (!isObject(resolved)) return [];
    const branches = (['allOf', 'anyOf', 'oneOf'] as const).flatMap((keyword) =>
      Array.isArray(resolved[keyword]) ? (resolved[keyword] as JsonSchema[]).flatMap((branch) => this.schemasAt(branch, path)) : [],
    );
    if (path.length === 0) return [resolved, ...branches];
    const [head, ...rest] = path;
    const next: JsonSchema[] = [];
    if (typeof head === 'number' && resolved.items !== undefined) next.push(resolved.items as JsonSchema);
    if (typeof head === 'string' && isObject(resolved.properties) && head in resolved.properties) next.push(resolved.properties[head] as JsonSchema);
    if (typeof head === 'string' && isObject(resolved.additionalProperties)) next.push(resolved.additionalProperties);
    return [...next.flatMap((child) => this.schemasAt(child, rest)), ...branches];
  }
}

/** Whether one of `schemas` is documented as checked against server state. */
export const checkedByServer = (schemas: readonly Schema[]) => schemas.some((schema) => schema[CHECKED_BY_SERVER] === true);

/** One line per ajv error, for a failure's message. */
export const describeProblems = (problems: readonly ErrorObject[]) =>
  problems
    .slice(0, 5)
    .map((problem) => `${problem.instancePath || '/'} ${problem.message ?? problem.keyword} ${JSON.stringify(problem.params)}`)
    .join('; ');
