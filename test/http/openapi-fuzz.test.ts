import { randomUUID } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { expect } from 'chai';
import fc from 'fast-check';
import Mocha from 'mocha';
import type { Db } from '../../src/db/knex.ts';
import {
  addMember,
  createAsset,
  createCanvas,
  createConversation,
  createOrganization,
  createProject,
  createSkill,
  newUser,
  type TestUser,
} from '../support/factories.ts';
import {
  deref,
  hostileString,
  hostileValue,
  type JsonSchema,
  mutateValue,
  nested,
  pathsOf,
  pollutionKeys,
  resolveRef,
  schemaArbitrary,
  withOwnKey,
} from '../support/json-schema-arbitrary.ts';
import { ContractValidator, describeProblems, pointer, checkedByServer } from '../support/openapi-contract.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';

/**
 * Issue 12 ("proof under faults"): every operation of the served /openapi.json, fuzzed from its
 * own schemas. For each operation, fast-check (fixed seed per operation) makes requests whose path
 * parameters are the ids of a real organization's resources (or random UUIDs, or hostile strings),
 * whose query and body are generated from the operation's parameter and body schemas — valid ones,
 * and ones with a hostile change (wrong types, unknown and prototype-polluting keys, huge strings,
 * NUL and control characters, deep nesting, edge numbers), and raw bodies (empty, not JSON, JSON
 * that is not an object, other content types). Each is sent by the organization's owner and again
 * without a valid token. Every answer must be below 500, and every 4xx the Error body
 * (`{code, message, data: {issues}}`, CONVENTIONS §3) with a non-empty documented code and a message.
 * An operation that answers without a token must be one the document declares open.
 *
 * Issue 37 made it the contract sweep, both ways, with the document as the judge (ajv, JSON
 * Schema 2020-12, test/support/openapi-contract.ts): a case the document calls valid is accepted
 * or refused for a documented reason (404, 409, 402, 403…, or a 400 whose issues all name fields
 * marked `x-checked-by-server`: state such as an id the caller cannot use, or content such as an
 * image's bytes); a case where a field is at fault is never a `validation_failed` with empty issues
 * (what a raw database error would give); and every JSON answer, 2xx and 4xx, validates against the
 * schema its status has in the document. Violations fail the operation's test (FUZZ_STATS=1 lists
 * them all, and the cases the document calls invalid that the server took).
 */

/** Fixed, so a run is repeatable; FUZZ_SEED and FUZZ_RUNS explore further by hand (e.g. FUZZ_SEED=7 FUZZ_RUNS=100). */
const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed_0012);
/** Cases per operation; each is sent twice (owner, no token). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 8);
/** Operations fuzzed at once. */
const CONCURRENCY = 12;

type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';
const methods: readonly Method[] = ['get', 'put', 'patch', 'post', 'delete'];

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonSchema;
  /** Where its schema is in the document (a JSON Pointer), for the validator. */
  at?: string;
}

interface Operation {
  method: Method;
  path: string;
  operationId: string;
  secured: boolean;
  parameters: Parameter[];
  /** The JSON body; `at` is its schema's JSON Pointer in the document. */
  body?: { required: boolean; schema: JsonSchema; at: string };
  /** The body is not JSON (tus chunks, Stripe's signed payload): cases send none and are not judged by the document. */
  otherBody: boolean;
  raw: Record<string, unknown>;
}

type OpenApiDocument = {
  paths: Record<string, Record<string, unknown>>;
  webhooks?: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, JsonSchema> };
  security?: unknown[];
};

/**
 * Operations not fuzzed, by rule, each with its reason (listed in the output as pending tests):
 * what the document marks as a webhook (under `webhooks`: called by us, not served), and what
 * streams (`text/event-stream`: the answer never ends while the run lives, so "the status" is its first line only).
 */
function skipReason(operation: Operation): string | undefined {
  const text = JSON.stringify(operation.raw);
  if (text.includes('text/event-stream')) return 'streams text/event-stream (SSE): the response does not end, so it cannot be fuzzed request by request';
  return undefined;
}

function operationsOf(document: OpenApiDocument): { operations: Operation[]; skipped: { title: string; reason: string }[] } {
  const operations: Operation[] = [];
  const skipped: { title: string; reason: string }[] = [];
  for (const [name, item] of Object.entries(document.webhooks ?? {})) {
    for (const method of Object.keys(item))
      skipped.push({ title: `webhook ${method.toUpperCase()} ${name}`, reason: 'a webhook the API sends, not an operation it serves' });
  }
  for (const [path, item] of Object.entries(document.paths)) {
    const shared = ((item.parameters as Parameter[] | undefined) ?? []).map((p, index) => ({
      p,
      at: `/${pointer('paths', path, 'parameters', String(index))}`,
    }));
    for (const method of methods) {
      const raw = item[method] as Record<string, unknown> | undefined;
      if (!raw) continue;
      const own = ((raw.parameters as Parameter[] | undefined) ?? []).map((p, index) => ({
        p,
        at: `/${pointer('paths', path, method, 'parameters', String(index))}`,
      }));
      const parameters = [...shared, ...own].map(({ p, at }) =>
        '$ref' in (p as object)
          ? {
              ...(resolveRef(document, (p as unknown as { $ref: string }).$ref) as unknown as Parameter),
              at: `${(p as unknown as { $ref: string }).$ref.slice(1)}/schema`,
            }
          : { ...p, at: `${at}/schema` },
      );
      const requestBody = raw.requestBody as { required?: boolean; content?: Record<string, { schema?: JsonSchema }> } | undefined;
      const json = requestBody?.content?.['application/json'];
      const security = (raw.security ?? document.security ?? []) as Record<string, unknown>[];
      const operation: Operation = {
        method,
        path,
        operationId: String(raw.operationId ?? `${method} ${path}`),
        secured: security.length > 0 && !security.some((requirement) => Object.keys(requirement).length === 0),
        parameters,
        body:
          requestBody && json
            ? {
                required: requestBody.required === true,
                schema: json.schema ?? true,
                at: `/${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}`,
              }
            : undefined,
        otherBody: requestBody !== undefined && json === undefined,
        raw,
      };
      const reason = skipReason(operation);
      if (reason) skipped.push({ title: `${method.toUpperCase()} ${path} (${operation.operationId})`, reason });
      else operations.push(operation);
    }
  }
  operations.sort((a, b) => phaseOf(a) - phaseOf(b));
  return { operations, skipped };
}

/**
 * When an operation is fuzzed: reads (0), writes (1), deletes (2), and what ends the fixture
 * organization or the owner's membership (3) very last, so the operations before them still meet
 * existing resources.
 */
function phaseOf(operation: Operation): 0 | 1 | 2 | 3 {
  if ((operation.method === 'delete' && operation.path === '/organizations/{organization_id}') || operation.path.endsWith('/leave')) return 3;
  return operation.method === 'delete' ? 2 : operation.method === 'get' ? 0 : 1;
}

// ——— sending ———

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
  json: unknown;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/**
 * node:http, not fetch: a GET may carry a body, the path and query go out exactly as built. A
 * kept-alive socket the server closed while idle is retried once on a new one (node's advice for
 * `reusedSocket`); a reset on a fresh socket is the server's, and fails the case.
 */
async function send(base: string, sent: Sent): Promise<Answer> {
  try {
    return await sendOnce(base, sent);
  } catch (error) {
    if ((error as NodeJS.ErrnoException & { reusedSocket?: boolean }).reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET') {
      return sendOnce(base, sent, false);
    }
    throw error;
  }
}

function sendOnce(base: string, sent: Sent, reuse = true): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const headers = { ...sent.headers, ...(sent.body !== undefined ? { 'content-length': String(Buffer.byteLength(sent.body)) } : {}) };
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: sent.method.toUpperCase(), path: sent.path, headers, agent: reuse ? agent : false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', (error) => reject(Object.assign(error, { reusedSocket: req.reusedSocket })));
    req.end(sent.body);
  });
}

const clip = (text: string, max = 600) => (text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text);
const describeSent = (sent: Sent) =>
  `${sent.method.toUpperCase()} ${clip(sent.path, 300)} headers=${clip(JSON.stringify({ ...sent.headers, authorization: sent.headers.authorization ? '<…>' : undefined }), 200)} body=${clip(sent.body === undefined ? '<none>' : String(sent.body), 400)}`;

let errorCodes: readonly string[] = [];
/** The owner's statuses per operation (FUZZ_STATS). */
const statuses: Record<string, Record<number, number>> = {};
/** Contract violations per operation (see `contractViolations`), reported by the operation's own test. */
const violations: Record<string, string[]> = {};
/** A case the document calls invalid that the owner's request got a 2xx for, per operation (FUZZ_STATS): what the server lets through. */
const invalidAccepted: Record<string, string> = {};
/** What the sweep judged: cases the document calls valid, and answers checked against their documented schema. */
const judged = { valid: 0, invalid: 0, unjudged: 0, answersValidated: 0 };

/** Every answer: below 500; a 4xx is exactly the Error body with a documented code and a message. */
function checkAnswer(answer: Answer, sent: Sent, who: string): void {
  const context = `${who}: ${describeSent(sent)} → ${answer.status} ${clip(answer.text)}`;
  expect(answer.status, context).to.be.below(500);
  if (answer.status < 400) return;
  expect(answer.contentType, context).to.match(/^application\/json/);
  const body = answer.json as { code?: unknown; message?: unknown; data?: { issues?: unknown } } | undefined;
  expect(body, context).to.be.an('object');
  expect(Object.keys(body!).sort(), context).to.deep.equal(['code', 'data', 'message']);
  expect(body!.code, context).to.be.a('string').that.is.not.empty;
  expect(errorCodes, context).to.include(body!.code);
  expect(body!.message, context).to.be.a('string').that.is.not.empty;
  expect(body!.data, context).to.be.an('object');
  expect(body!.data!.issues, context).to.be.an('array');
}

// ——— what a case is made of ———

const printable = fc.string({ minLength: 1, maxLength: 40, unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) });

/** Sent as it is, not percent-encoded: broken escapes and invalid UTF-8 the server must decode itself. */
const RAW = 'raw:';

/** Percent-encoding as a client would; a lone surrogate (which encodeURIComponent refuses) goes as its UTF-8 replacement. */
const encode = (value: string): string => {
  if (value.startsWith(RAW)) return value.slice(RAW.length);
  try {
    return encodeURIComponent(value);
  } catch {
    return [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('');
  }
};

/** A path segment that is not an id: hostile, encoded (a NUL goes as %00), or raw. */
const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    'not-a-uuid',
    '00000000-0000-0000-0000-00000000000g',
    '0',
    '-1',
    'null',
    'undefined',
    '..',
    '%',
    '\u0000',
    'a\u0000b',
    '__proto__',
    'constructor',
  ),
  fc.constantFrom(' ', '%2F', "'; select pg_sleep(1); --", '😀', '\ud800', 'x'.repeat(3000)),
  fc.constantFrom(`${RAW}%FF`, `${RAW}%E0%A4%A`, `${RAW}%`, `${RAW}%00`, `${RAW}%C0%AF`, `${RAW}%2e%2e`, `${RAW}a%2Fb`),
  printable,
);

/** Query strings no schema describes, sent raw after the generated ones. */
const rawQueries = fc.constantFrom('%FF=1', 'a=%', '=', '&&&', '%00=%00', 'limit=1&limit=2', 'organization_id[]=x', 'organization_id[a]=b', '__proto__[x]=1');

/** How a query value goes on the wire. */
const queryString = (value: unknown): string =>
  typeof value === 'string'
    ? value
    : Array.isArray(value)
      ? value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(',')
      : JSON.stringify(value);

/**
 * Every `format: uri` value: URLs the outbound guard refuses before any lookup or connection
 * (loopback, private and metadata addresses, other schemes, credentials), so no case fetches from the
 * internet or depends on a resolver (a name that does not resolve is a documented 502, see the report in issue 12).
 */
const localUris = fc.constantFrom(
  'http://127.0.0.1:9/page',
  'https://127.0.0.1/',
  'http://[::1]/',
  'http://169.254.169.254/latest/meta-data/',
  'http://10.0.0.1/admin',
  'http://192.168.0.1/',
  'http://0x7f.1/',
  'http://2130706433/',
  'http://localhost/',
  'http://user:secret@127.0.0.1/',
  'file:///etc/passwd',
  'ftp://127.0.0.1/file',
  'javascript:alert(1)',
  'data:text/html,<b>hi</b>',
  `http://127.0.0.1/${'a'.repeat(1800)}`,
);

/** E-mail addresses as people have them (fast-check's RFC 5322 ones are mostly refused), on a reserved domain. */
const emails = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z][a-z0-9._-]{0,20}$/).map((local) => `${local}@example.test`) },
  { weight: 1, arbitrary: fc.emailAddress() },
);

interface Fixtures {
  /** Path-parameter values by name: existing things of the organization. */
  path: Record<string, string[]>;
  /** Body and query property values by name (ids of real things), mixed into what schemas generate. */
  named: Record<string, fc.Arbitrary<unknown>>;
}

type BodyCase =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; label: string }
  | { kind: 'raw'; text: string; contentType: string; contentEncoding?: string; label: string };

/** Bodies no schema describes: empty, broken, deep, of another type or content type. */
const rawBodies: fc.Arbitrary<BodyCase> = fc
  .constantFrom(
    { text: '', contentType: 'application/json', label: 'empty' },
    { text: 'not json', contentType: 'application/json', label: 'not JSON' },
    { text: '{"a":', contentType: 'application/json', label: 'truncated JSON' },
    { text: '{"a":1,"a":{"b":2}}', contentType: 'application/json', label: 'duplicate keys' },
    { text: '\ufeff{}', contentType: 'application/json', label: 'byte-order mark' },
    { text: '[]', contentType: 'application/json', label: 'an array' },
    { text: 'null', contentType: 'application/json', label: 'null' },
    { text: '"text"', contentType: 'application/json', label: 'a string' },
    { text: '12345678901234567890', contentType: 'application/json', label: 'a number' },
    { text: '{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"role":"owner"}}}', contentType: 'application/json', label: 'prototype pollution' },
    { text: `${'['.repeat(20_000)}${']'.repeat(20_000)}`, contentType: 'application/json', label: 'arrays nested 20000 deep' },
    { text: `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`, contentType: 'application/json', label: 'objects nested 5000 deep' },
    { text: '{"name":"x"}', contentType: 'text/plain', label: 'JSON as text/plain' },
    { text: 'name=x&organization_id=y', contentType: 'application/x-www-form-urlencoded', label: 'a form' },
    { text: '{"name":"x"}', contentType: 'application/json; charset=latin1', label: 'another charset' },
    { text: '{"name":"x"}', contentType: 'application/json; charset=x-unknown', label: 'an unknown charset' },
    { text: 'not gzip at all', contentType: 'application/json', contentEncoding: 'gzip', label: 'a broken gzip body' },
    { text: '{"name":"x"}', contentType: 'application/json', contentEncoding: 'x-unknown', label: 'an unknown content encoding' },
    { text: '\u0000\u0001\u0002', contentType: 'application/json', label: 'control characters' },
  )
  .map((raw) => ({ kind: 'raw' as const, ...raw }));

/** What a case breaks: nothing (every part generated valid from its schema), or one part of the request. */
type Fault = 'none' | 'path' | 'query' | 'body' | 'headers';

/** A part of the request: its valid values, and its hostile ones. */
interface Part<T> {
  valid: fc.Arbitrary<T>;
  hostile: fc.Arbitrary<T>;
}

function bodyPart(operation: Operation, document: OpenApiDocument, fixtures: Fixtures): Part<BodyCase> {
  if (operation.otherBody) return { valid: fc.constant<BodyCase>({ kind: 'none' }), hostile: rawBodies };
  if (!operation.body) {
    return {
      valid: fc.constant<BodyCase>({ kind: 'none' }),
      hostile: fc.oneof(
        hostileValue.map((value): BodyCase => ({ kind: 'json', value: { zz_unknown: value }, label: 'a body where none is taken' })),
        rawBodies,
      ),
    };
  }
  const valid = schemaArbitrary(operation.body.schema, { document, named: fixtures.named, formats: { uri: localUris, email: emails } });
  return {
    valid: valid.map((value): BodyCase => ({ kind: 'json', value, label: 'valid' })),
    hostile: fc.oneof(
      {
        weight: 3,
        arbitrary: valid.chain((value) => mutateValue(value)).map(({ mutation, value }): BodyCase => ({ kind: 'json', value, label: `mutated (${mutation})` })),
      },
      { weight: 1, arbitrary: rawBodies },
    ),
  };
}

function queryPart(operation: Operation, document: OpenApiDocument, fixtures: Fixtures): Part<[string, string][]> {
  const parameters = operation.parameters.filter((p) => p.in === 'query');
  const properties = Object.fromEntries(parameters.map((p) => [p.name, p.schema ?? { type: 'string' }]));
  const required = parameters.filter((p) => p.required).map((p) => p.name);
  const valid = schemaArbitrary(
    { type: 'object', properties, required, additionalProperties: false },
    { document, named: fixtures.named, formats: { uri: localUris, email: emails } },
  ).map((value) =>
    Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, queryString(v)]),
  );
  const hostileEntry = fc.tuple(fc.constantFrom(...parameters.map((p) => p.name), 'zz_unknown', '__proto__', 'constructor', 'limit[]', ''), hostileString);
  return {
    valid,
    hostile: fc.oneof(
      // One parameter (or an unknown one) hostile, or given twice.
      {
        weight: 3,
        arbitrary: fc
          .tuple(valid, hostileEntry, fc.boolean())
          .map(([entries, [name, value], twice]) =>
            twice ? [...entries, [name, value] as [string, string]] : [...entries.filter(([k]) => k !== name), [name, value] as [string, string]],
          ),
      },
      { weight: 1, arbitrary: fc.tuple(valid, rawQueries).map(([entries, raw]) => [...entries, [RAW, raw] as [string, string]]) },
      { weight: 1, arbitrary: fc.constant([] as [string, string][]) },
    ),
  };
}

function pathPart(operation: Operation, fixtures: Fixtures, document: OpenApiDocument): Part<Record<string, string>> {
  const names = [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const valid: Record<string, fc.Arbitrary<string>> = {};
  for (const name of names) {
    const existing = fixtures.path[name] ?? [];
    const schema = operation.parameters.find((p) => p.in === 'path' && p.name === name)?.schema;
    // A parameter with an enum or a pattern and no fixture: values of its own schema (a UUID would only be invalid).
    if (!existing.length && schema && /"(enum|pattern)"/.test(JSON.stringify(deref(document, schema)))) {
      valid[name] = schemaArbitrary(schema, { document }).map(String);
      continue;
    }
    // An existing thing where there is one, else (and sometimes anyway) a UUID that names nothing.
    valid[name] = existing.length ? fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...existing) }, { weight: 1, arbitrary: fc.uuid() }) : fc.uuid();
  }
  const hostile =
    names.length === 0
      ? fc.record(valid)
      : fc
          .tuple(fc.record(valid), fc.constantFrom(...names), hostileSegment)
          .map(([values, name, segment]) => ({ ...values, [name]: segment }) as Record<string, string>);
  return { valid: fc.record(valid), hostile };
}

const headerPart: Part<Record<string, string>> = {
  valid: fc.record({ 'service-api-version': fc.constantFrom('1', '1.0', '1.99'), 'idempotency-key': fc.uuid() }, { requiredKeys: [] }),
  hostile: fc.record(
    {
      'service-api-version': fc.constantFrom('2', '0', 'abc', '', '1.x.y', '-1', '99999999999999999999', ' 1', '1,2'),
      'idempotency-key': fc.oneof(printable, fc.constantFrom('', ' ', 'k'.repeat(300), '../../x', '%00')),
    },
    { requiredKeys: [] },
  ),
};

interface Case {
  fault: Fault;
  path: Record<string, string>;
  query: [string, string][];
  body: BodyCase;
  headers: Record<string, string>;
  anonymous: 'none' | 'garbage' | 'other-scheme' | 'forged';
}

function caseArbitrary(operation: Operation, document: OpenApiDocument, fixtures: Fixtures): fc.Arbitrary<Case> {
  const parts = {
    path: pathPart(operation, fixtures, document),
    query: queryPart(operation, document, fixtures),
    body: bodyPart(operation, document, fixtures),
    headers: headerPart,
  };
  const faults = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Fault>('none') },
    { weight: 3, arbitrary: fc.constant<Fault>('body') },
    { weight: 2, arbitrary: fc.constant<Fault>('query') },
    { weight: 1, arbitrary: fc.constant<Fault>('path') },
    { weight: 1, arbitrary: fc.constant<Fault>('headers') },
  );
  return faults.chain((fault) =>
    fc.record({
      fault: fc.constant(fault),
      path: fault === 'path' ? parts.path.hostile : parts.path.valid,
      query: fault === 'query' ? parts.query.hostile : parts.query.valid,
      body: fault === 'body' ? parts.body.hostile : parts.body.valid,
      headers: fault === 'headers' ? parts.headers.hostile : parts.headers.valid,
      anonymous: fc.constantFrom('none', 'garbage', 'other-scheme', 'forged'),
    }),
  );
}

/** A token signed with another secret: well-formed, never valid. */
const forgedToken = () => {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: 'user_forged', exp: 4_102_444_800 })}.${Buffer.from('not-the-signature').toString('base64url')}`;
};

function toSent(operation: Operation, item: Case, token: string | undefined, anonymous?: Case['anonymous']): Sent {
  const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => encode(item.path[name] ?? randomUUID()));
  const query = item.query.map(([k, v]) => (k === RAW ? v : `${encode(k)}=${encode(v)}`)).join('&');
  const headers: Record<string, string> = { ...item.headers, accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  else if (anonymous === 'garbage') headers.authorization = 'Bearer not.a.token';
  else if (anonymous === 'other-scheme') headers.authorization = 'Basic dXNlcjpwYXNz';
  else if (anonymous === 'forged') headers.authorization = `Bearer ${forgedToken()}`;
  let body: string | undefined;
  if (item.body.kind === 'json') {
    body = JSON.stringify(item.body.value);
    headers['content-type'] = 'application/json';
  } else if (item.body.kind === 'raw') {
    body = item.body.text;
    headers['content-type'] = item.body.contentType;
    if (item.body.contentEncoding) headers['content-encoding'] = item.body.contentEncoding;
  }
  return { method: operation.method, path: query ? `${path}?${query}` : path, headers, body };
}

/**
 * What the document says of a case: valid (every parameter and the body conform), invalid (with
 * the problems, and whether a field is at fault rather than the body as a whole), or unjudged
 * (raw bytes, a parameter given twice or one the document does not list, a lone surrogate: the
 * document does not say how the server must read them).
 */
type Verdict = { kind: 'valid' } | { kind: 'invalid'; problems: string; fieldAtFault: boolean } | { kind: 'unjudged' };

/** What the document says of every input (the request body's description): no U+0000 in a string or key, no `__proto__` key. */
function unsafeInput(value: unknown): string | undefined {
  const text = JSON.stringify(value) ?? '';
  if (text.includes('\\u0000')) return 'a string or key holds U+0000';
  if (text.includes('"__proto__":') || (text.includes('"constructor":') && text.includes('"prototype":'))) return 'a __proto__ key';
  return undefined;
}

function judge(operation: Operation, item: Case, validator: ContractValidator): Verdict {
  const problems: string[] = [];
  let fieldAtFault = false;
  const unsafe = unsafeInput([item.path, item.query, item.headers, item.body.kind === 'json' ? item.body.value : null]);
  if (unsafe) return { kind: 'invalid', problems: unsafe, fieldAtFault: true };
  const names = item.query.map(([name]) => name);
  if (names.includes(RAW) || new Set(names).size !== names.length) return { kind: 'unjudged' };
  const declared = new Set(operation.parameters.filter((p) => p.in === 'query').map((p) => p.name));
  if (names.some((name) => !declared.has(name))) return { kind: 'unjudged' };
  for (const parameter of operation.parameters) {
    let value: string | undefined;
    if (parameter.in === 'path') value = item.path[parameter.name];
    else if (parameter.in === 'query') value = item.query.find(([name]) => name === parameter.name)?.[1];
    else if (parameter.in === 'header') value = Object.entries(item.headers).find(([name]) => name.toLowerCase() === parameter.name.toLowerCase())?.[1];
    else continue;
    if (value === undefined) {
      if (parameter.required) {
        problems.push(`${parameter.in} ${parameter.name}: required`);
        fieldAtFault = true;
      }
      continue;
    }
    if (value.startsWith(RAW) || /\p{Surrogate}/u.test(value)) return { kind: 'unjudged' };
    if (!parameter.at) continue;
    const isArray = JSON.stringify(deref(validator.document, parameter.schema ?? true)).startsWith('{"type":"array"');
    const found = validator.problems(parameter.at, isArray ? value.split(',') : value, { coerce: true });
    if (found.length) {
      problems.push(`${parameter.in} ${parameter.name}: ${describeProblems(found)}`);
      fieldAtFault = true;
    }
  }
  // The body as a whole at fault (raw bytes, missing, or given where none is taken): no field to name.
  if (item.body.kind === 'raw') return { kind: 'invalid', problems: [...problems, `body: ${item.body.label}`].join('; '), fieldAtFault: false };
  if (operation.otherBody) return { kind: 'unjudged' };
  if (item.body.kind === 'none') {
    if (operation.body?.required) return { kind: 'invalid', problems: [...problems, 'body: required'].join('; '), fieldAtFault: false };
  } else if (!operation.body) {
    return { kind: 'invalid', problems: [...problems, 'body: the operation takes none'].join('; '), fieldAtFault: false };
  } else {
    const found = validator.problems(operation.body.at, item.body.value);
    if (found.length) {
      problems.push(`body: ${describeProblems(found)}`);
      if (
        found.some((problem) => problem.instancePath !== '' || ['required', 'additionalProperties', 'minProperties', 'oneOf', 'if'].includes(problem.keyword))
      )
        fieldAtFault = true;
    }
  }
  return problems.length ? { kind: 'invalid', problems: problems.join('; '), fieldAtFault } : { kind: 'valid' };
}

interface Issue {
  path?: (string | number)[];
  message?: string;
}

/** Whether an issue names a field (of the body, or a parameter) the document marks as checked by the server (state, content). */
function namesCheckedField(operation: Operation, issue: Issue, validator: ContractValidator): boolean {
  // Some issues lead with their location (`query.cursor`); a field marked covers what it holds (`filter` its `state`).
  const full = issue.path ?? [];
  const path = ['query', 'params', 'body'].includes(String(full[0])) && full.length > 1 ? full.slice(1) : full;
  for (let end = path.length; end > 0; end--) {
    const prefix = path.slice(0, end);
    if (operation.body && checkedByServer(validator.schemasAt(operation.body.schema, prefix))) return true;
    const parameter = operation.parameters.find((p) => p.name === prefix[0] && p.in !== 'header');
    if (parameter !== undefined && checkedByServer(validator.schemasAt(parameter.schema ?? true, prefix.slice(1)))) return true;
  }
  return false;
}

/** Where the document keeps the JSON schema of an operation's answer with `status`, if it declares one. */
function responseSchemaAt(operation: Operation, document: OpenApiDocument, status: number): string | undefined {
  const responses = (operation.raw.responses ?? {}) as Record<string, { $ref?: string; content?: Record<string, { schema?: unknown }> }>;
  let response = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  if (!response) return undefined;
  let at = `/${pointer('paths', operation.path, operation.method, 'responses', responses[String(status)] ? String(status) : responses[`${String(status)[0]}XX`] ? `${String(status)[0]}XX` : 'default')}`;
  if (response.$ref) {
    at = response.$ref.slice(1);
    response = resolveRef(document, response.$ref) as typeof response;
  }
  return response.content?.['application/json']?.schema === undefined ? undefined : `${at}/${pointer('content', 'application/json', 'schema')}`;
}

/**
 * The contract, both ways (issue 37): a case valid by the document is accepted, or refused for a
 * documented reason of state (any status but 400, or a 400 whose issues all name fields the
 * document marks as checked against server state); a field at fault is named (a 400
 * `validation_failed` never comes with empty issues, as a raw database error would); and every
 * answer that is JSON validates against the schema the document gives its status.
 */
function contractViolations(
  operation: Operation,
  document: OpenApiDocument,
  validator: ContractValidator,
  verdict: Verdict,
  answers: readonly (readonly [string, Answer, Sent])[],
): string[] {
  const found: string[] = [];
  const [, owner, asOwner] = answers[0]!;
  const error = owner.json as { code?: string; data?: { issues?: Issue[] } } | undefined;
  const issues = error?.data?.issues ?? [];
  if (verdict.kind === 'valid' && owner.status === 400) {
    const allowed = error?.code === 'validation_failed' && issues.length > 0 && issues.every((issue) => namesCheckedField(operation, issue, validator));
    if (!allowed) found.push(`valid by the document, refused 400 for no documented state reason: ${describeSent(asOwner)} → ${clip(owner.text, 400)}`);
  }
  if (
    verdict.kind !== 'unjudged' &&
    (verdict.kind === 'valid' || verdict.fieldAtFault) &&
    owner.status === 400 &&
    error?.code === 'validation_failed' &&
    issues.length === 0
  )
    found.push(`a field is at fault but no issue names it: ${describeSent(asOwner)} → ${clip(owner.text, 400)}`);
  for (const [who, answer, sent] of answers) {
    if (!/^application\/(problem\+)?json/.test(answer.contentType) || answer.json === undefined) continue;
    const at = responseSchemaAt(operation, document, answer.status);
    if (!at) continue;
    judged.answersValidated++;
    const problems = validator.problems(at, answer.json);
    if (problems.length)
      found.push(`${who}: the ${answer.status} answer does not validate (${describeProblems(problems)}): ${describeSent(sent)} → ${clip(answer.text, 300)}`);
  }
  return found;
}

/** A deterministic seed per operation: adding an operation does not change the cases of the others. */
const seedOf = (operationId: string) => [...operationId].reduce((hash, c) => (Math.imul(hash, 31) + c.charCodeAt(0)) | 0, SEED);

describe('openapi fuzz: every operation of the served /openapi.json, from its own schemas (issue 12)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let document: OpenApiDocument;
  let owner: TestUser;
  let fixtures: Fixtures;
  let validator: ContractValidator;

  describe('the JSON Schema → fast-check builder', () => {
    const document = {
      components: {
        schemas: {
          Id: { type: 'string', format: 'uuid' },
          Node: {
            type: 'object',
            properties: { id: { $ref: '#/components/schemas/Id' }, children: { type: 'array', items: { $ref: '#/components/schemas/Node' } } },
          },
        },
      },
    };
    const sample = (schema: JsonSchema, options = {}) => fc.sample(schemaArbitrary(schema, { document, ...options }), { seed: SEED, numRuns: 60 });

    it('keeps required properties, enums, bounds, formats and additionalProperties: false', () => {
      const schema = {
        type: 'object',
        properties: {
          id: { $ref: '#/components/schemas/Id' },
          kind: { type: 'string', enum: ['a', 'b'] },
          name: { type: 'string', minLength: 2, maxLength: 5 },
          count: { type: 'integer', minimum: 3, maximum: 7 },
          at: { type: 'string', format: 'date-time' },
          link: { type: 'string', format: 'uri' },
          mail: { type: 'string', format: 'email' },
          tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2 },
          either: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
          maybe: { type: ['integer', 'null'] },
        },
        required: ['id', 'kind', 'name', 'count', 'tags'],
        additionalProperties: false,
      };
      for (const value of sample(schema) as Record<string, unknown>[]) {
        expect(Object.keys(value)).to.include.members(['id', 'kind', 'name', 'count', 'tags']);
        expect(Object.keys(schema.properties)).to.include.members(Object.keys(value));
        expect(value.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        expect(['a', 'b']).to.include(value.kind);
        expect((value.name as string).length).to.be.within(2, 5);
        expect(value.count).to.be.within(3, 7);
        if ('at' in value) expect(Number.isNaN(Date.parse(value.at as string))).to.equal(false);
        if ('link' in value) expect(() => new URL(value.link as string)).not.to.throw();
        if ('mail' in value) expect(value.mail).to.include('@');
        expect((value.tags as unknown[]).length).to.be.within(1, 2);
        if ('either' in value) expect([true, false, null]).to.include(value.either);
        if ('maybe' in value) expect(value.maybe === null || Number.isInteger(value.maybe)).to.equal(true);
      }
    });

    it('resolves recursive $refs, maps (additionalProperties: schema), allOf and named values', () => {
      for (const value of sample({ $ref: '#/components/schemas/Node' }) as Record<string, unknown>[]) expect(value).to.be.an('object');
      for (const value of sample({ type: 'object', additionalProperties: { type: 'integer' } }) as Record<string, unknown>[]) {
        for (const item of Object.values(value)) expect(Number.isInteger(item)).to.equal(true);
      }
      const merged = sample({
        allOf: [
          { type: 'object', properties: { a: { const: 1 } }, required: ['a'] },
          { properties: { b: { const: 2 } }, required: ['b'] },
        ],
      });
      for (const value of merged) expect(value).to.deep.equal({ a: 1, b: 2 });
      const named = sample(
        { type: 'object', properties: { organization_id: { type: 'string' } }, required: ['organization_id'] },
        { named: { organization_id: fc.constant('org-1') }, namedBias: 1 },
      );
      for (const value of named) expect(value).to.deep.equal({ organization_id: 'org-1' });
      expect(deref(document, { $ref: '#/components/schemas/Id' })).to.deep.equal({ type: 'string', format: 'uuid' });
    });

    it('mutates: every mutation changes the value, and pollution keys are own properties of the JSON', () => {
      const value = { a: 'x', b: { c: [1, 2] } };
      const mutated = fc.sample(mutateValue(value), { seed: SEED, numRuns: 200 });
      for (const { value: changed } of mutated) expect(JSON.stringify(changed)).not.to.equal(JSON.stringify(value));
      expect(mutated.map((m) => m.mutation)).to.include.members(['replace', 'unknown-field', 'pollution-key', 'drop-field']);
      const polluted = mutated.find((m) => m.mutation === 'pollution-key')!.value;
      expect(pollutionKeys.some((key) => JSON.stringify(polluted).includes(`"${key}"`))).to.equal(true);
      expect(JSON.stringify(withOwnKey({}, '__proto__', 1))).to.equal('{"__proto__":1}');
      expect(pathsOf(nested(3))).to.have.length(4);
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    });
  });

  describe('every operation', () => {
    before(async function () {
      this.timeout(60_000);
      // A web process and an in-process worker on a database of their own: metered reads, generations
      // and runs are answered by the sandbox providers instead of waiting for a worker that never comes.
      stack = await startStack({ WORKER_CONCURRENCY: '16', WORKER_POLL_INTERVAL_SECONDS: '0.5' });
      ({ server, db } = stack);
      const served = await send(server.url, { method: 'get', path: '/openapi.json', headers: {} });
      expect(served.status).to.equal(200);
      document = served.json as OpenApiDocument;
      validator = new ContractValidator(document);
      const errorSchema = deref(document, { $ref: '#/components/schemas/Error' }) as { properties: { code: { enum: string[] } } };
      errorCodes = errorSchema.properties.code.enum;
      expect(errorCodes).to.include('validation_failed');

      // A real organization with one of each thing the path parameters name (as test/http/route-contract.test.ts makes them).
      owner = newUser();
      const member = newUser();
      const organization = await createOrganization(server, owner);
      await addMember(db, organization, member, 'member');
      const project = await createProject(server, owner, organization);
      const inProject = { project_id: project.id };
      const [asset, canvas, conversation, skill] = await Promise.all([
        createAsset(server, owner, organization, inProject),
        createCanvas(server, owner, organization, inProject),
        createConversation(server, owner, organization, inProject),
        createSkill(server, owner, organization, inProject),
      ]);
      const created = async (method: string, path: string, body: unknown) => {
        const res = await server.request(method, path, { token: owner.token, body });
        expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).to.be.oneOf([200, 201]);
        return res.body;
      };
      const versions = await server.request('get', `/skills/${skill.id}/versions`, { token: owner.token });
      const invitation = await created('post', `/organizations/${organization}/invitations`, {
        email: `invitee_${randomUUID().slice(0, 8)}@example.test`,
        role: 'member',
      });
      const grant = await created('post', `/access/canvas/${canvas.id}/grants`, { user_id: member.id, role: 'viewer' });
      const connector = await created('post', '/connectors', { organization_id: organization, type: 'http', name: 'Fuzz connector' });
      const listing = await created('post', '/skill-listings', { skill_id: skill.id });
      const generation = await created('post', '/generations', { organization_id: organization, kind: 'text', prompt: 'Fuzz generation' });
      const task = (
        await created('post', '/scheduled-tasks', {
          organization_id: organization,
          title: 'Fuzz task',
          prompt: 'Probe',
          schedule: { cron: '0 9 * * *', timezone: 'UTC' },
        })
      ).scheduled_task;
      const publicModels = await server.request('get', '/models/public', { token: owner.token });
      const models: string[] = (publicModels.body?.items ?? publicModels.body?.models ?? [])
        .map((m: { id?: string; key?: string }) => m.id ?? m.key)
        .filter(Boolean);
      const message = await created('post', `/conversations/${conversation.id}/messages`, { content: 'Fuzz message' });
      const messageId: string = message.message?.id ?? message.id;
      expect(messageId, JSON.stringify(message)).to.be.a('string');
      // Credits, so metered reads and generations are accepted and run (on the sandbox providers) instead of stopping at 402.
      await created('post', `/organizations/${organization}/credits/adjustments`, { amount: 1_000_000, reason: 'fuzz' });
      const path: Record<string, string[]> = {
        organization_id: [organization],
        user_id: [member.id, owner.id],
        project_id: [project.id],
        asset_id: [asset.id],
        canvas_id: [canvas.id],
        conversation_id: [conversation.id],
        skill_id: [skill.id],
        version_id: [versions.body.items[0].id],
        invitation_id: [invitation.invitation.id],
        resource_type: ['canvas', 'asset', 'chat_conversation', 'project', 'skill', 'scheduled_task'],
        resource_id: [canvas.id, asset.id, conversation.id, project.id, skill.id, task.id],
        grant_id: [grant.id],
        doc_id: [asset.id],
        connector_id: [connector.connector.id],
        chat_model_id: ['sandbox-chat'],
        region: ['US', 'global'],
        listing_id: [listing.listing.id],
        slug: [listing.listing.slug],
        generation_id: [generation.generation.id],
        scheduled_task_id: [task.id],
      };
      const named: Record<string, fc.Arbitrary<unknown>> = {};
      for (const name of ['organization_id', 'project_id', 'asset_id', 'canvas_id', 'conversation_id', 'skill_id', 'user_id', 'listing_id', 'connector_id']) {
        named[name] = fc.constantFrom(...path[name]!);
      }
      named.project_ids = fc.constant(project.id);
      named.task_id = fc.constant(task.id);
      named.message_id = fc.constant(messageId);
      named.active_leaf_id = fc.constant(messageId);
      named.leaf_id = fc.constant(messageId);
      named.model = fc.constantFrom('sandbox-chat', ...models);
      // Cursors only come from a previous page: mostly none (a generated one is refused, 400, which is covered too).
      named.cursor = fc.constant(undefined);
      fixtures = { path, named };

      // One test per operation the document holds now (operations added by others are fuzzed too).
      const { operations: all, skipped } = operationsOf(document);
      // FUZZ_ONLY=<regex of operationIds>: a debugging aid to fuzz some operations only.
      const only = process.env.FUZZ_ONLY ? new RegExp(process.env.FUZZ_ONLY) : undefined;
      const operations = all.filter((operation) => !only || only.test(operation.operationId));
      const suite = this.test!.parent!;
      for (const { title, reason } of skipped) suite.addTest(new Mocha.Test(`skipped: ${title} — ${reason}`));
      const outcomes = fuzzAll(operations);
      for (const operation of operations) {
        suite.addTest(
          new Mocha.Test(`${operation.method.toUpperCase()} ${operation.path} (${operation.operationId})`, async () => {
            const failure = await outcomes.get(operation)!;
            if (failure) throw failure;
            const found = violations[operation.operationId] ?? [];
            if (found.length) throw new Error(`${found.length} contract violations, the first ones:\n${found.slice(0, 3).join('\n')}`);
          }),
        );
      }
      // Last, once every operation is done.
      suite.addTest(
        new Mocha.Test('the sweep judged cases both ways and validated answers against the document', async () => {
          await Promise.all(operations.map((operation) => outcomes.get(operation)));
          if (only) return;
          // A sweep that judged nothing (every case unjudged, no answer matched a schema) would pass vacuously.
          expect(judged.valid, JSON.stringify(judged)).to.be.greaterThan(operations.length);
          expect(judged.invalid, JSON.stringify(judged)).to.be.greaterThan(operations.length);
          expect(judged.answersValidated, JSON.stringify(judged)).to.be.greaterThan(4 * operations.length);
        }),
      );
    });

    after(async () => {
      // FUZZ_STATS=1: how far the owner's requests got, per operation (how many passed validation).
      if (process.env.FUZZ_STATS) {
        const total: Record<string, number> = {};
        for (const counts of Object.values(statuses)) for (const [status, n] of Object.entries(counts)) total[status] = (total[status] ?? 0) + n;
        const neverSucceeded = Object.entries(statuses).filter(([, counts]) => !Object.keys(counts).some((status) => Number(status) < 300));
        process.stdout.write(
          `judged: ${JSON.stringify(judged)}\ncontract violations:\n  ${Object.entries(violations)
            .map(([id, found]) => `${id} (${found.length}): ${found[0]}`)
            .join('\n  ')}\ninvalid by the document, accepted:\n  ${Object.entries(invalidAccepted)
            .map(([id, text]) => `${id}: ${text}`)
            .join('\n  ')}\n`,
        );
        process.stdout.write(
          `owner statuses: ${JSON.stringify(total)}\nnever 2xx (${neverSucceeded.length}): ${neverSucceeded.map(([id, c]) => `${id} ${JSON.stringify(c)}`).join('\n  ')}\n`,
        );
      }
      await stack?.stop();
      agent.destroy();
    });

    // Found by this fuzz: a body that is not what its Content-Encoding says was a 500 (zlib's error reached the error mapper unmapped).
    it('a compressed body that does not decompress is a 400 Error body, not a 500 (regression)', async () => {
      const { gzipSync } = await import('node:zlib');
      const bodies: [string, string | Buffer][] = [
        ['gzip', 'not gzip at all'],
        ['gzip', gzipSync('{"name":"Truncated Co"}').subarray(0, 12)],
        ['deflate', Buffer.from([0x78, 0x9c, 1, 2, 3, 4, 5])],
        ['br', 'not brotli at all, definitely not'],
      ];
      for (const [encoding, body] of bodies) {
        const sent: Sent = {
          method: 'post',
          path: '/organizations',
          headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json', 'content-encoding': encoding },
          body,
        };
        const answer = await send(server.url, sent);
        checkAnswer(answer, sent, `${encoding} body`);
        expect(answer.status).to.equal(400);
        expect((answer.json as { message: string }).message).to.equal('request body could not be decompressed: it is not valid data for its Content-Encoding');
      }
    });

    it('serves an OpenAPI document with operations to fuzz', () => {
      const { operations } = operationsOf(document);
      expect(operations.length).to.be.greaterThan(100);
    });
  });

  /**
   * Fuzzes the operations CONCURRENCY at a time (the requests mostly wait on Postgres and the
   * worker), phase after phase (phaseOf), the last one alone. Each outcome is the
   * failure (or undefined), for the operation's own test to report.
   */
  function fuzzAll(operations: Operation[]): Map<Operation, Promise<Error | undefined>> {
    const outcomes = new Map<Operation, Promise<Error | undefined>>();
    const settle = new Map<Operation, (failure: Error | undefined) => void>();
    for (const operation of operations) outcomes.set(operation, new Promise((resolve) => settle.set(operation, resolve)));
    void (async () => {
      for (const current of [0, 1, 2, 3]) {
        const queue = operations.filter((o) => phaseOf(o) === current);
        const worker = async () => {
          for (let operation = queue.shift(); operation; operation = queue.shift()) {
            settle.get(operation)!(
              await fuzz(operation).then(
                () => undefined,
                (failure: Error) => failure,
              ),
            );
          }
        };
        await Promise.all(Array.from({ length: current === 3 ? 1 : CONCURRENCY }, worker));
      }
    })();
    return outcomes;
  }

  async function fuzz(operation: Operation): Promise<void> {
    await fc.assert(
      fc.asyncProperty(caseArbitrary(operation, document, fixtures), async (item) => {
        const asOwner = toSent(operation, item, owner.token);
        const anonymous = toSent(operation, item, undefined, item.anonymous);
        const [ownerAnswer, anonymousAnswer] = await Promise.all([send(server.url, asOwner), send(server.url, anonymous)]);
        statuses[operation.operationId] ??= {};
        const counts = statuses[operation.operationId]!;
        counts[ownerAnswer.status] = (counts[ownerAnswer.status] ?? 0) + 1;
        checkAnswer(ownerAnswer, asOwner, 'the owner');
        const verdict = judge(operation, item, validator);
        judged[verdict.kind]++;
        if (verdict.kind === 'invalid' && ownerAnswer.status < 300) invalidAccepted[operation.operationId] ??= `${verdict.problems} — ${describeSent(asOwner)}`;
        const found = contractViolations(operation, document, validator, verdict, [
          ['the owner', ownerAnswer, asOwner],
          ['no valid token', anonymousAnswer, anonymous],
        ]);
        if (found.length) violations[operation.operationId] = [...(violations[operation.operationId] ?? []), ...found];
        checkAnswer(anonymousAnswer, anonymous, `no valid token (${item.anonymous})`);
        // Every status an operation answers is one its document lists (a generated client knows it).
        const documented = Object.keys((operation.raw.responses ?? {}) as object);
        for (const [who, answer, sent] of [
          ['the owner', ownerAnswer, asOwner],
          ['no valid token', anonymousAnswer, anonymous],
        ] as const)
          expect(documented, `${who}: ${describeSent(sent)} → ${answer.status} is not among the documented statuses`).to.include(String(answer.status));
        if (operation.secured) expect(anonymousAnswer.status, `no valid token must never succeed: ${describeSent(anonymous)}`).to.be.at.least(400);
      }),
      { seed: seedOf(operation.operationId), numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
    );
  }
});
