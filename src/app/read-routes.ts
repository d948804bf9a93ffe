/**
 * Composition root of the metered reads' HTTP face: every route of the social operations, web
 * search and page reading, generated from each operation's one declaration (src/metering/operation.ts):
 * the call, its quote and the catalogs, each with the operation's own input and output schemas in
 * /openapi.json. (Here rather than in a domain: the builders need the HTTP layer and three domains.)
 */
import type { ZodObject } from 'zod';
import { z } from '../core/zod.ts';
import {
  type CallTerms,
  callAndWait,
  callResponseOf,
  callTermsDependencies,
  callTermsFields,
  callTermsKeys,
  describeOperation,
  descriptorSchema,
  presentCall,
  quoteOf,
  quoteSchema,
  type ReadOperation,
} from '../metering/index.ts';
import { listing, within } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { read_url, search, searchOperations } from '../search/index.ts';
import { socialOperations } from '../social/index.ts';

interface ReadRouteOptions {
  tag: string;
  path: string;
  operationId: string;
  summary: string;
  /** `envelope`: `{…terms, input: {…}}` (social, spec §4.5); `flat`: the input's fields beside the terms (search, read-url). */
  shape: 'envelope' | 'flat';
}

const pricing = (operation: ReadOperation) =>
  `Price: ${operation.price.per_request} credit${operation.price.per_request === 1 ? '' : 's'} a call` +
  (operation.price.per_page > 0 ? ` plus ${operation.price.per_page} a result page` : '') +
  '; the quote (the ceiling held before the read) counts every page the input allows, the charge only the pages fetched.';

const billing =
  'The quoted ceiling is held and the read enqueued in one transaction; a worker calls the provider, validates its answer against the output schema and captures exactly `credits_charged` (the rest of the hold is released), and this request answers when it is settled. Refused with 400 (nothing held) when the quote exceeds `max_credits`; 402 when the balance or the caller’s spending limit cannot cover it; 409 with `run_lock` once the turn lost its lock. A provider failure or malformed answer is 502, a timeout 504, input the provider refuses 422: nothing is charged for any of them, nor when the caller hangs up before the answer. Every read that runs is billed, a repeated `tool_call_id` too (a retry with the same `Idempotency-Key` replays the first answer instead of running again); `tool_call_id`, `conversation_id` and `message_id` are kept on the ledger rows.';

/** The call's body: the billing terms and the operation's input, enveloped (spec §4.5) or side by side. */
const callBody = (operation: ReadOperation, shape: ReadRouteOptions['shape']) =>
  shape === 'envelope'
    ? z
        .object({ ...callTermsFields, input: operation.input })
        .strict()
        .openapi(callTermsDependencies)
    : (operation.input as unknown as ZodObject).extend(callTermsFields).strict().openapi(callTermsDependencies);

/**
 * The answer: social reads keep the spec's envelope (§4.5: `{operation, result, requests, credits_charged}`);
 * search and read-url put their result's fields at the top level beside the billing fields
 * (CONVENTIONS §4: `{results, requests, credits_charged}`, `{url, title, text, …, credits_charged}`).
 */
function responseOf(operation: ReadOperation, shape: ReadRouteOptions['shape']) {
  const enveloped = callResponseOf(operation);
  if (shape === 'envelope') return enveloped;
  const { result: _result, ...billing } = enveloped.shape;
  return (operation.output as unknown as ZodObject).extend(billing);
}

/** POST <path>: run the read and answer with its result. */
function readRoute(operation: ReadOperation, options: ReadRouteOptions): AnyRoute {
  const body = callBody(operation, options.shape);
  return defineRoute({
    method: 'post',
    path: options.path,
    operationId: options.operationId,
    idempotent: {},
    tag: options.tag,
    summary: options.summary,
    description: `${operation.description}\n\n${pricing(operation)}\n\n${billing}`,
    body,
    response: { status: 200, description: 'The read’s result and what it cost', schema: responseOf(operation, options.shape) },
    errors: [402, 403, 409, 422, 502, 503, 504],
    authorize: within('body'),
    handler: async ({ body, actor, deps, ctx }) => {
      const { terms, input } = split(body as Record<string, unknown>, options.shape);
      const call = presentCall(await callAndWait(deps, actor, operation, terms, input, ctx));
      if (options.shape === 'envelope') return call as never;
      const { result, ...billing } = call;
      return { ...(result as Record<string, unknown>), ...billing } as never;
    },
  });
}

/** POST <path>/quote: the credit ceiling a call with this input would hold, without holding it. */
function quoteRoute(operation: ReadOperation, options: ReadRouteOptions): AnyRoute {
  // The call's own body (spec §4.5): a client quotes exactly what it is about to send. The billing
  // terms other than the organization change nothing in the quote.
  const body = callBody(operation, options.shape);
  return defineRoute({
    method: 'post',
    path: `${options.path}/quote`,
    operationId: options.operationId.replace(/^run/, 'quote'),
    tag: options.tag,
    summary: `Quote: ${options.summary.charAt(0).toLowerCase()}${options.summary.slice(1)}`,
    description: `The credit ceiling a call with this input would hold (what \`max_credits\` is compared with), without holding or billing anything. Takes the body the call takes (its other billing fields are accepted and change nothing here). ${pricing(operation)}`,
    body,
    response: { status: 200, description: 'The quote', schema: quoteSchema },
    errors: [403],
    authorize: within('body'),
    handler: async ({ body }) => {
      const { input } = split(body as Record<string, unknown>, options.shape);
      return { operation: operation.name, ...quoteOf(operation, input), price: { ...operation.price } };
    },
  });
}

/** GET <path>: the catalog (spec §2.9, §4.3). */
function catalogRoute(operations: readonly ReadOperation[], options: Omit<ReadRouteOptions, 'shape'>): AnyRoute {
  return defineRoute({
    method: 'get',
    path: options.path,
    operationId: options.operationId,
    tag: options.tag,
    summary: options.summary,
    description:
      'Every operation with its description, the JSON Schemas of its `input` and `result` (generated from the same schemas that validate them) and its price.',
    query: z.object({ organization_id: callTermsFields.organization_id }),
    response: { status: 200, description: 'The operations', schema: z.object({ operations: z.array(descriptorSchema) }) },
    authorize: listing('query'),
    handler: async ({ query, actor }) => ({ operations: (await actor.membership(query.organization_id)) ? operations.map(describeOperation) : [] }),
  });
}

function split(body: Record<string, unknown>, shape: ReadRouteOptions['shape']): { terms: CallTerms; input: unknown } {
  if (shape === 'envelope') {
    const { input, ...terms } = body;
    return { terms: terms as unknown as CallTerms, input };
  }
  const terms: Record<string, unknown> = {};
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) ((callTermsKeys as string[]).includes(key) ? terms : input)[key] = value;
  return { terms: terms as unknown as CallTerms, input };
}

/** `net2_profile` → `runSocialNet2Profile`. */
const operationIdOf = (name: string) => `runSocial${name.replace(/(^|_)([a-z0-9])/g, (_, _sep, c: string) => c.toUpperCase())}`;
/** The description's first sentence, as the operation's summary. */
const summaryOf = (operation: ReadOperation) => operation.description.split(/(?<=\.)\s/)[0]!.replace(/\.$/, '');

/**
 * Social data reads (spec §4.3–§4.5): the catalog, then for each operation `POST /social/{operation}`
 * and its quote.
 */
export const socialRoutes: AnyRoute[] = [
  catalogRoute(socialOperations, {
    tag: 'Social',
    path: '/social/operations',
    operationId: 'listSocialOperations',
    summary: 'List the social operations with their input and result schemas and prices',
  }),
  ...socialOperations.flatMap((operation) => {
    const options = {
      tag: 'Social',
      path: `/social/${operation.name}`,
      operationId: operationIdOf(operation.name),
      summary: summaryOf(operation),
      shape: 'envelope' as const,
    };
    return [readRoute(operation, options), quoteRoute(operation, options)];
  }),
];

/** Web search and page reading, billed like social reads (their input fields sit beside the billing fields). */
export const searchRoutes: AnyRoute[] = [
  catalogRoute(searchOperations, {
    tag: 'Search',
    path: '/search/operations',
    operationId: 'listSearchOperations',
    summary: 'List the search operations (web search, page reading) with their schemas and prices',
  }),
  readRoute(search, { tag: 'Search', path: '/search', operationId: 'runSearch', summary: 'Search the web', shape: 'flat' }),
  readRoute(read_url, { tag: 'Search', path: '/read-url', operationId: 'runReadUrl', summary: 'Read a web page: readable text and metadata', shape: 'flat' }),
];
