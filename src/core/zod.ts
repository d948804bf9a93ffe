import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// `.openapi(...)` on every schema, for names and examples in /openapi.json.
extendZodWithOpenApi(z);

export { z };

/**
 * Query-string boolean: only the words `true` and `false` (no surprising truthiness). Published as
 * `type: boolean` (a preprocess is transparent to the document), so generated clients take a
 * boolean, and a default reads as the boolean it is; a client's `true` arrives as the word.
 */
export const queryBoolean = z.preprocess(
  (value) => (value === 'true' ? true : value === 'false' ? false : value),
  z.boolean({ error: 'must be true or false' }),
);

export const uuid = z.string().uuid();
export const timestamp = z.string().datetime({ offset: true }).openapi({ format: 'date-time' });

/** How deep a JSON-valued field may nest, and how large it may be serialised (fields may lower the size). */
export const JSON_MAX_DEPTH = 64;
export const JSON_MAX_BYTES = 1_000_000;

/**
 * Why `value` is not acceptable JSON (depth beyond `JSON_MAX_DEPTH`, a non-JSON value, or too
 * large), or undefined. Iterative, so a hostile nesting cannot overflow the stack.
 */
export function jsonValueProblem(value: unknown, maxBytes = JSON_MAX_BYTES): { path: (string | number)[]; message: string } | undefined {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length) {
    const { value: node, path } = stack.pop()!;
    if (node === null || typeof node === 'string' || typeof node === 'boolean') continue;
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) return { path, message: 'must be a JSON value (a finite number)' };
      continue;
    }
    if (typeof node !== 'object') return { path, message: 'must be a JSON value' };
    if (path.length >= JSON_MAX_DEPTH) return { path: [], message: `must nest at most ${JSON_MAX_DEPTH} levels deep` };
    const children: [string | number, unknown][] = Array.isArray(node) ? node.map((item, index) => [index, item]) : Object.entries(node);
    for (const [key, item] of children) stack.push({ value: item, path: [...path, key] });
  }
  // Depth is bounded now, so serialising is safe.
  if (Buffer.byteLength(JSON.stringify(value)) > maxBytes) return { path: [], message: `must be at most ${maxBytes} bytes as JSON` };
  return undefined;
}

/**
 * Any JSON value, at most `JSON_MAX_DEPTH` levels deep and `JSON_MAX_BYTES` serialised. In
 * OpenAPI it is the component `JsonValue` with no type constraint (`{}`): a self-referencing
 * definition makes generated clients fail to compile (openapi-typescript: TS2502).
 */
export const jsonValue: z.ZodType<unknown> = z
  .unknown()
  .superRefine((value, ctx) => {
    if (value === undefined) return void ctx.addIssue({ code: 'custom', message: 'must be a JSON value' });
    const problem = jsonValueProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
  })
  .openapi('JsonValue', { description: `Any JSON value (object, array, string, number, boolean or null), nested at most ${JSON_MAX_DEPTH} levels deep.` });

/** A JSON-valued field with a smaller size cap than JSON_MAX_BYTES (400 naming the field). */
export const jsonValueAtMost = (maxBytes: number) =>
  jsonValue.refine((value) => value === undefined || Buffer.byteLength(JSON.stringify(value)) <= maxBytes, `must be at most ${maxBytes / 1024} KiB as JSON`);

/**
 * A user id (JWT `sub`): the one limit for tokens, path parameters and bodies, so any user who can
 * sign in can also be read, changed and removed.
 */
export const USER_ID_MAX = 255;
export const userId = z.string().min(1).max(USER_ID_MAX);

/** The `{organization_id}` path parameter of every organization-scoped route (organization ids are strings). */
export const organizationIdParams = z.object({ organization_id: z.string().min(1).max(64) });

/** C0 and C1 control characters (CR, LF, TAB, BEL, ESC, NUL, DEL, …). */
const CONTROL = '\\u0000-\\u001f\\u007f-\\u009f';

/**
 * What a single-line text is, as the document states it and the server checks it (after trimming):
 * no control characters and at least one character that is not white space.
 */
export const SINGLE_LINE = new RegExp(`^[^${CONTROL}]*[^\\s${CONTROL}][^${CONTROL}]*$`);
const SINGLE_LINE_OR_EMPTY = new RegExp(`^[^${CONTROL}]*$`);

/**
 * A single-line name (names, titles, slugs): trimmed, 1–`max` characters, no control characters,
 * which would otherwise flow verbatim into e-mail subjects and logs.
 */
export const singleLine = (max: number, min = 1) =>
  z
    .string()
    .trim()
    .min(min)
    .max(max)
    .regex(min > 0 ? SINGLE_LINE : SINGLE_LINE_OR_EMPTY, 'must be a single line without control characters');

/**
 * An e-mail address: the one rule of the whole API (invitations, billing, alert recipients). The
 * server checks the pattern the document declares (zod's practical rule: dot-separated local part,
 * a domain with a top-level name of two letters or more), so `0@com` is invalid on both sides.
 */
export const EMAIL = /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;
export const emailAddress = (message = 'must be an e-mail address') => z.string().trim().max(320).regex(EMAIL, message).openapi({ format: 'email' });

/**
 * The pattern of a comma-separated list of `item` (a regular-expression source), white space
 * allowed around each: what query parameters such as `types=a,b` declare.
 */
export const commaSeparated = (item: string) => `^\\s*(?:${item})\\s*(?:,\\s*(?:${item})\\s*)*$`;

/** The alternatives of `values` as a regular-expression source (dots and other specials escaped). */
export const oneOfWords = (values: readonly string[]) => values.map((value) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');

/** A UUID as zod's `uuid()` checks it (RFC 9562 version and variant, or the nil and max UUIDs). */
export const UUID_PATTERN =
  '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff';

/** The IANA time zones this runtime knows (Intl's canonical list, which leaves out `UTC`): what time-zone fields declare as their enum. */
export const TIME_ZONES: readonly string[] = [...new Set([...Intl.supportedValuesOf('timeZone'), 'UTC'])].sort();

/**
 * An absolute http(s) URL with a host (no credentials, no white space), as a document pattern:
 * a value that matches is one `new URL` reads with an http or https scheme.
 */
export const HTTP_URL_PATTERN = '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#@]+(?:[/?#]\\S*)?$';

/** Standard base64 (with padding), as zod's `z.base64()` checks it, declared as the document's pattern. */
const BASE64 = /^(?:[0-9a-zA-Z+/]{4})*(?:[0-9a-zA-Z+/]{2}==|[0-9a-zA-Z+/]{3}=)?$/;
export const base64 = () =>
  z
    .string()
    .regex(BASE64, 'Invalid base64-encoded string')
    // contentEncoding is JSON Schema 2020-12, which OpenAPI 3.1 schemas are; the generator's types predate it.
    .openapi({ contentEncoding: 'base64' } as Record<string, unknown>);

/**
 * The extension that marks a field the server checks against what a schema cannot say: server
 * state (an id, a model, a role that must exist and be usable by the caller) or the content of the
 * value (an image's bytes, an order between items). A well-formed value that fails is 400 naming
 * the field, and the field's description says when. The contract sweep
 * (test/http/openapi-fuzz.test.ts) accepts such a 400 for a valid request only on fields marked so.
 */
export const CHECKED_BY_SERVER = 'x-checked-by-server';

/** `schema`, marked CHECKED_BY_SERVER; `refusal` says when it is refused (appended to its description). */
export const checkedByServer = <T extends z.ZodType>(schema: T, refusal: string): T => {
  const description = schema.description;
  return schema.openapi({
    description: description ? `${description} ${refusal}` : refusal,
    [CHECKED_BY_SERVER]: true,
  } as Record<string, unknown>) as T;
};
