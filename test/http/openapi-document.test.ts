import { expect } from 'chai';
import { createOrganization, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

type Json = Record<string, any>;

/** Creates whose answer is no resource one can address (a hold, a ledger entry, a Stripe session…): no Location. */
const withoutLocation: Record<string, string> = {
  beginChatRunCredits: 'a credit hold, read through the run it belongs to',
  adjustCredits: 'a ledger entry, listed with the ledger',
  createBillingCustomer: 'the billing contact, read with GET …/billing',
  createBillingPortalSession: 'a one-time URL of the payment provider, in the body',
  postConversationMessage: 'a message, listed with the conversation’s messages',
  startScheduledTaskRun: 'a run, listed by GET /scheduled-task-runs',
  createPause: 'a pause, listed by GET /ops/pauses',
};

function operations(document: Json): { id: string; method: string; path: string; op: Json }[] {
  const found = [];
  for (const [path, item] of Object.entries<Json>(document.paths))
    for (const [method, op] of Object.entries<Json>(item)) found.push({ id: op.operationId as string, method, path, op });
  return found;
}

const headerNames = (response: Json | undefined) => Object.keys(response?.headers ?? {});

/**
 * Walks /openapi.json: every status an operation answers and every header a client relies on is
 * documented; the document is generator-clean (patterns without regex flags, booleans as booleans,
 * no component with defaults behind a request body).
 */
describe('the OpenAPI document, walked', () => {
  const ctx = useServer();
  let document: Json;
  before(async () => {
    document = (await ctx.server.request('get', '/openapi.json')).body;
  });

  it('documents the statuses every operation can answer, with the headers they carry', () => {
    const problems: string[] = [];
    for (const { id, op } of operations(document)) {
      const responses = op.responses as Json;
      const secured = (op.security ?? document.security).length > 0 && op.security?.[0] && Object.keys(op.security[0]).length > 0;
      // The metrics page is not behind the API's authentication, rate limit or database.
      const must = id === 'getMetrics' ? [400, 401, 404, 500] : [400, 413, 415, 431, 500, 503, ...(secured ? [401, 429] : [])];
      for (const status of must) if (!responses[status]) problems.push(`${id}: ${status} not documented`);
      if (secured && id !== 'getMetrics') {
        for (const [status, response] of Object.entries<Json>(responses)) {
          if (status === '401' || status === '431') continue;
          for (const name of ['RateLimit-Policy', 'RateLimit', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'])
            if (!headerNames(response).includes(name)) problems.push(`${id} ${status}: no ${name}`);
        }
      }
      if (responses[401] && !headerNames(responses[401]).includes('WWW-Authenticate')) problems.push(`${id} 401: no WWW-Authenticate`);
      for (const status of ['429', '503'])
        if (responses[status] && !headerNames(responses[status]).includes('Retry-After')) problems.push(`${id} ${status}: no Retry-After`);
      if (responses[201] && !withoutLocation[id] && !headerNames(responses[201]).includes('Location')) problems.push(`${id} 201: no Location`);
    }
    expect(problems).to.deep.equal([]);
    expect(Object.keys(document.components.headers).sort()).to.deep.equal(
      [
        'Idempotent-Replayed',
        'Location',
        'RateLimit',
        'RateLimit-Limit',
        'RateLimit-Policy',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Retry-After',
        'WWW-Authenticate',
      ].sort(),
    );
    // The exceptions are still creates (a renamed operation must not slip through the list).
    const ids = new Set(operations(document).map((o) => o.id));
    for (const id of Object.keys(withoutLocation)) expect(ids.has(id), id).to.equal(true);
  });

  it('is generator-clean: patterns are plain ECMA-262 sources, query booleans are booleans, no defaulted component behind a request body', () => {
    const patterns: string[] = [];
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) return void value.forEach(walk);
      if (typeof value !== 'object' || value === null) return;
      const record = value as Json;
      if (typeof record.pattern === 'string') patterns.push(record.pattern);
      for (const item of Object.values(record)) walk(item);
    };
    walk(document);
    expect(patterns.length).to.be.greaterThan(5);
    for (const pattern of patterns) {
      expect(pattern, pattern).not.to.match(/\/[gimsuy]+$/);
      expect(() => new RegExp(pattern, 'u'), pattern).not.to.throw();
    }

    const stringBooleans = operations(document).flatMap(({ id, op }) =>
      ((op.parameters ?? []) as Json[]).filter((p) => p.schema?.enum && [...p.schema.enum].sort().join() === 'false,true').map((p) => `${id} ${p.name}`),
    );
    expect(stringBooleans).to.deep.equal([]);
    const deleted = (operations(document).find((o) => o.id === 'listAssets')!.op.parameters as Json[]).find((p) => p.name === 'deleted')!;
    expect(deleted.schema.type).to.equal('boolean');
    const includeScheduled = (operations(document).find((o) => o.id === 'listConversations')!.op.parameters as Json[]).find(
      (p) => p.name === 'include_scheduled',
    )!;
    expect(includeScheduled.schema).to.include({ type: 'boolean', default: false });

    // A component a request body refers to holds no field with a default (generators would make it required).
    const components = document.components.schemas as Record<string, Json>;
    const refs = new Set<string>();
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) return void value.forEach(collect);
      if (typeof value !== 'object' || value === null) return;
      const record = value as Json;
      if (typeof record.$ref === 'string' && record.$ref.startsWith('#/components/schemas/')) {
        const name = record.$ref.slice('#/components/schemas/'.length);
        if (refs.has(name)) return;
        refs.add(name);
        collect(components[name]);
      }
      for (const item of Object.values(record)) collect(item);
    };
    for (const { op } of operations(document)) collect(op.requestBody);
    const defaulted = [...refs].filter((name) =>
      Object.values<Json>(components[name]?.properties ?? {}).some((property) => property && typeof property === 'object' && 'default' in property),
    );
    expect(defaulted).to.deep.equal([]);
    // The fork's `mode` (default `branch`) is in the request body itself, optional there.
    const fork = operations(document).find((o) => o.id === 'forkConversation')!.op.requestBody.content['application/json'].schema;
    expect(fork.properties.mode.default).to.equal('branch');
    expect(fork.required).to.deep.equal(['message_id']);
  });

  it('says what the server does: null admitted where answered, no parameter optional that is required, the served versions declared', () => {
    // A nullable object as allOf[ref, {type: [object, null]}] admits no null (every allOf member must hold).
    const allOfNull: string[] = [];
    const walk = (value: unknown, at: string): void => {
      if (typeof value !== 'object' || value === null) return; // arrays too: their entries are walked by index
      const record = value as Json;
      if (Array.isArray(record.allOf) && record.allOf.some((part: Json) => part?.type === 'null' || (Array.isArray(part?.type) && part.type.includes('null'))))
        allOfNull.push(at);
      for (const [key, item] of Object.entries(record)) walk(item, `${at}/${key}`);
    };
    walk(document, '#');
    expect(allOfNull).to.deep.equal([]);
    const customer = document.components.schemas.BillingSummary.properties.customer;
    expect(customer).to.deep.equal({ anyOf: [{ $ref: '#/components/schemas/BillingCustomer' }, { type: 'null' }] });

    // A query parameter the server requires is declared required, and never typed as nullable.
    const signed = operations(document).find((o) => o.path === '/asset-files/{asset_id}')!.op.parameters as Json[];
    expect(signed.find((p) => p.name === 'expires')).to.deep.include({ required: true, schema: signed.find((p) => p.name === 'expires')!.schema });
    expect(signed.find((p) => p.name === 'expires')!.schema).to.include({ type: 'string', pattern: '^\\d{1,12}$' });
    const nullableQuery = operations(document).flatMap(({ id, op }) =>
      ((op.parameters ?? []) as Json[])
        .filter((p) => p.in !== 'header' && Array.isArray(p.schema?.type) && p.schema.type.includes('null'))
        .map((p) => `${id} ${p.name}`),
    );
    expect(nullableQuery).to.deep.equal([]);

    // Service-Api-Version states what is served: `2` is invalid by the document, as the server refuses it.
    const versions = operations(document).flatMap(({ op }) => ((op.parameters ?? []) as Json[]).filter((p) => p.name === 'Service-Api-Version'));
    expect(versions.length).to.be.greaterThan(300);
    for (const version of versions) expect(version.schema).to.include({ type: 'string', pattern: '^1(\\.\\d+)*$' });
    const served = new RegExp(versions[0]!.schema.pattern as string, 'u');
    expect(['1', '1.2'].map((v) => served.test(v))).to.deep.equal([true, true]);
    expect(['2', '1a', '0.9'].map((v) => served.test(v))).to.deep.equal([false, false, false]);
  });

  it('a create answers 201 with Location, its replay too; the path reads the resource; answers past authentication carry RateLimit-*', async () => {
    const owner = newUser();
    const created = await ctx.server.request('post', '/organizations', {
      token: owner.token,
      headers: { 'idempotency-key': 'location-1' },
      body: { name: 'Location Co' },
    });
    expect(created.status).to.equal(201);
    const org = created.body.organization.id as string;
    expect(created.headers.get('location')).to.equal(`/organizations/${org}`);
    expect(created.headers.get('ratelimit-limit')).to.match(/^\d+$/);
    expect(created.headers.get('ratelimit-remaining')).to.match(/^\d+$/);
    expect(created.headers.get('ratelimit-reset')).to.match(/^\d+$/);
    expect(created.headers.get('ratelimit-policy')).to.equal(`"default";q=${created.headers.get('ratelimit-limit')};w=60`);
    expect(created.headers.get('ratelimit')).to.equal(`"default";r=${created.headers.get('ratelimit-remaining')};t=${created.headers.get('ratelimit-reset')}`);
    const replay = await ctx.server.request('post', '/organizations', {
      token: owner.token,
      headers: { 'idempotency-key': 'location-1' },
      body: { name: 'Location Co' },
    });
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.headers.get('location')).to.equal(`/organizations/${org}`);
    expect((await ctx.server.request('get', created.headers.get('location')!, { token: owner.token })).status).to.equal(200);

    const asset = await ctx.server.request('post', '/assets', { token: owner.token, body: { organization_id: org, type: 'text', content: 'x' } });
    expect(asset.headers.get('location')).to.equal(`/assets/${asset.body.id}`);
    const invitation = await ctx.server.request('post', `/organizations/${org}/invitations`, {
      token: owner.token,
      body: { email: 'invitee@example.test', role: 'member' },
    });
    expect(invitation.headers.get('location')).to.equal(`/organizations/${org}/invitations/${invitation.body.invitation.id}`);

    const conversation = await ctx.server.request('post', '/conversations', { token: owner.token, body: { organization_id: org } });
    const message = await ctx.server.request('post', `/conversations/${conversation.body.id}/messages`, { token: owner.token, body: { content: 'Hi' } });
    const fork = await ctx.server.request('post', `/conversations/${conversation.body.id}/fork`, {
      token: owner.token,
      body: { message_id: message.body.message.id },
    });
    expect(fork.status).to.equal(201);
    // The fork's own address, not its source's.
    expect(fork.headers.get('location')).to.equal(`/conversations/${fork.body.id}`);
    const second = await createOrganization(ctx.server, owner);
    expect(second).to.be.a('string');
  });
});
