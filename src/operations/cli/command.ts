// What every CLI command is made of: the options it may take, the context it runs in, and the
// helpers that turn options into the operator API's query and body fields.
import type { OpsClient } from './api.ts';

/** Every option of every command (node:util parseArgs); each command says which it takes. */
export const options = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  state: { type: 'string' },
  queue: { type: 'string' },
  organization: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  resource: { type: 'string' },
  request: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  exact: { type: 'boolean' },
  reason: { type: 'string' },
  hours: { type: 'string' },
  'dead-letters': { type: 'boolean' },
  all: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  interval: { type: 'string' },
  stuck: { type: 'boolean' },
  origin: { type: 'string' },
  internal: { type: 'boolean' },
  until: { type: 'string' },
  job: { type: 'string' },
  action: { type: 'string' },
} as const;
export type Option = keyof typeof options;
export type Values = { [K in Option]?: (typeof options)[K]['type'] extends 'string' ? string : boolean };

export interface Command {
  /** Options the command takes besides --url, --token, --json, --help. */
  takes: Option[];
  /** Positional arguments after the command words. */
  args: string[];
  run(ctx: Context): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: a printed answer, read field by field as its type (./openapi-types.ts) describes it
export type Json = any;

export interface Context {
  args: string[];
  values: Values;
  /** The operator API, typed by the OpenAPI document. */
  api: OpsClient;
  print(text: string): void;
  /** Prints the API's answer as JSON under --json, else `table()`. */
  show(answer: Json, table: () => string): void;
  sleep(ms: number): Promise<void>;
}

/** `active (stuck: 95s, expected 30s)` for a stuck job: the state column carries it (scripts read the columns by position). */

export const numberOf = (text: string | undefined) => (text === undefined ? undefined : Number(text));
// A flag given is `true` in the query (openapi-fetch writes it as the word); left out otherwise.
export const flag = (on: boolean | undefined) => (on ? true : undefined);
export const reasonOf = (values: Values) => (values.reason ? { reason: values.reason } : {});

export const defined = (object: Record<string, unknown>) => Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));

/** The job filter options a list and a bulk action share. */
export const filterOf = (values: Values) =>
  defined({
    state: values.state,
    queue: values.queue,
    organization_id: values.organization,
    from: values.from,
    to: values.to,
    resource_id: values.resource,
    request_id: values.request,
    origin: values.origin,
  });
export const FILTER_OPTIONS: Option[] = ['state', 'queue', 'organization', 'from', 'to', 'resource', 'request', 'origin'];
