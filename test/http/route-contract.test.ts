import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ZodObject, ZodPipe, type ZodType } from 'zod';
import type { AnyRoute } from '../../src/http/route.ts';
import { apiRoutes } from '../../src/app/routes.ts';
import { socialOperation } from '../../src/social/index.ts';
import { sampleInput } from '../support/read-samples.ts';
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
import type { ApiResponse } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

/**
 * The contract every operation of the API keeps (CONVENTIONS §2–§4, spec §4.1), generated from the
 * route registry itself: a new operation is covered the moment it is registered. Where a property
 * needs data the registry cannot give (an existing id, a valid body), the tables below are the
 * forcing function: a route they do not cover fails with "add a … for …".
 */

type Property =
  | 'no-token'
  | 'unknown-body-field'
  | 'unknown-query-parameter'
  | 'non-uuid-path-id'
  | 'outsider-like-missing'
  | 'create-needs-permission'
  | 'collection-never-404';

/**
 * Operations a property does not apply to, each with its reason. Every entry must name a
 * registered operation (checked below), so a stale exception fails instead of hiding a route.
 */
const exceptions: readonly { property: Property; operationId: string; reason: string }[] = [
  ...['getPublicSocialTrends', 'getPublicNet3Trends'].map((operationId) => ({
    property: 'outsider-like-missing' as const,
    operationId,
    reason: 'public trends are the same for every signed-in caller, and every region exists: there is no outsider and no missing id',
  })),
  {
    property: 'create-needs-permission',
    operationId: 'createPause',
    reason: 'a pause needs jobs.manage (owners and admins), not resources.create: tested in test/operations/control.test.ts',
  },
  ...['patchAssetUpload', 'terminateAssetUpload', 'createAssetUploadByTus'].map((operationId) => ({
    property: 'unknown-query-parameter' as const,
    operationId,
    reason: 'a tus request is checked for its protocol headers (Tus-Resumable…) before its query: the probe sends none and gets the 400 naming them',
  })),
  ...['patchAssetUpload', 'terminateAssetUpload'].map((operationId) => ({
    property: 'outsider-like-missing' as const,
    operationId,
    reason:
      'a tus request is checked for its protocol headers first (the same 400 for a missing and an existing upload); the 404 to anyone but its creator is tested in test/uploads/local.test.ts',
  })),
  {
    property: 'outsider-like-missing',
    operationId: 'getChatModel',
    reason: 'the chat-model catalog is the same for every signed-in caller: there is no outsider',
  },
];

const excepted = (property: Property, route: AnyRoute) => exceptions.some((e) => e.property === property && e.operationId === route.operationId);

// ——— what the registry tells about a route ———

/** The object schema behind a schema (a pipe validates its input object first), if any. */
function objectSchema(schema: unknown): ZodObject | undefined {
  if (schema instanceof ZodObject) return schema;
  if (schema instanceof ZodPipe) return objectSchema((schema as ZodPipe).in);
  return undefined;
}

const pathParams = (route: AnyRoute) => [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
const bodyKeys = (route: AnyRoute) => Object.keys(objectSchema(route.body)?.shape ?? {});
const queryKeys = (route: AnyRoute) => Object.keys(objectSchema(route.query)?.shape ?? {});
const title = (route: AnyRoute) => `${route.method.toUpperCase()} ${route.path}`;

/** A path parameter is a UUID when its schema says so: it refuses 'not-a-uuid' and takes a random UUID. */
function isUuidParam(route: AnyRoute, name: string): boolean {
  const schema = objectSchema(route.params)?.shape[name] as ZodType | undefined;
  return !!schema && !schema.safeParse('not-a-uuid').success && schema.safeParse(randomUUID()).success;
}

/** No path parameters and an organization named in the body or the query (spec §4.1). */
const isCollectionLevel = (route: AnyRoute) =>
  pathParams(route).length === 0 && (bodyKeys(route).includes('organization_id') || queryKeys(route).includes('organization_id'));

/** A create: a POST on a collection path whose body names the organization and that answers 201. */
const isCreate = (route: AnyRoute) =>
  route.method === 'post' && pathParams(route).length === 0 && bodyKeys(route).includes('organization_id') && route.response.status === 201;

// ——— the data tables ———

/**
 * Path parameters by name: how to make one that names nothing (`missing`), and the existing one
 * the `before` hook creates. `resource_type` is a kind, not an id: it stays `canvas`, and
 * `resource_id`/`grant_id` are the fixture canvas and a grant on it.
 */
const fixtures: Record<string, { missing: () => string; existing?: string; fixedKind?: true }> = {
  organization_id: { missing: () => randomUUID() },
  user_id: { missing: () => `user_${randomUUID().slice(0, 8)}` },
  asset_id: { missing: randomUUID },
  upload_id: { missing: () => randomUUID().replaceAll('-', '') },
  canvas_id: { missing: randomUUID },
  conversation_id: { missing: randomUUID },
  project_id: { missing: randomUUID },
  skill_id: { missing: randomUUID },
  version_id: { missing: randomUUID },
  invitation_id: { missing: randomUUID },
  grant_id: { missing: randomUUID },
  resource_type: { missing: () => 'canvas', existing: 'canvas', fixedKind: true },
  // A thumbnail size of an asset (the asset id decides what exists).
  size: { missing: () => '256', existing: '256', fixedKind: true },
  resource_id: { missing: randomUUID },
  doc_id: { missing: randomUUID },
  connector_id: { missing: randomUUID },
  chat_model_id: { missing: () => `no-such-model-${randomUUID().slice(0, 8)}`, existing: 'sandbox-chat' },
  // Any region is valid (public trends exist for every country); only the probes that stop before the handler use it.
  region: { missing: () => 'ZZ', existing: 'US' },
  // A draft listing: readable by its author only, so an outsider's answer is a missing one's.
  listing_id: { missing: randomUUID },
  generation_id: { missing: randomUUID },
  scheduled_task_id: { missing: randomUUID },
  slug: { missing: () => `no-such-listing-${randomUUID().slice(0, 8)}` },
  // The job console: a job, a bulk action and a pause of the fixture organization, its scheduled task, a request id.
  job_id: { missing: randomUUID },
  bulk_action_id: { missing: randomUUID },
  pause_id: { missing: randomUUID },
  schedule_key: { missing: () => `task:${randomUUID()}` },
  request_id: { missing: () => `no-such-request-${randomUUID().slice(0, 8)}`, existing: 'route-contract-request' },
  // A webhook endpoint of the fixture organization and its ping delivery.
  endpoint_id: { missing: randomUUID },
  delivery_id: { missing: randomUUID },
};

function fixtureFor(name: string) {
  const fixture = fixtures[name];
  if (!fixture || fixture.existing === undefined) throw new Error(`add a fixture for ${name}`);
  return fixture as { missing: () => string; existing: string; fixedKind?: true };
}

const allExisting = () => Object.fromEntries(Object.entries(fixtures).map(([n, f]) => [n, f.existing ?? '']));
const existingValues = (route: AnyRoute) => Object.fromEntries(pathParams(route).map((n) => [n, fixtureFor(n).existing]));
const missingValues = (route: AnyRoute) => Object.fromEntries(pathParams(route).map((n) => [n, fixtureFor(n).missing()]));

const pathOf = (route: AnyRoute, values: Record<string, string>) => route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name]!));

/** Values for required query parameters, by name (a list of an organization is filled by the caller). */
const queryValues: Record<string, () => string> = {
  organization_id: () => randomUUID(),
  slug: () => 'route-contract',
  key: () => 'route_contract',
  plan: () => 'pro',
  q: () => 'route contract',
};

/** The query a route cannot do without (its required parameters), plus `extra`. */
function minimalQuery(route: AnyRoute, extra: Record<string, string> = {}): Record<string, string> {
  const schema = objectSchema(route.query);
  const query: Record<string, string> = {};
  if (schema) {
    for (const [name, field] of Object.entries(schema.shape)) {
      if ((field as ZodType).safeParse(undefined).success) continue;
      const value = queryValues[name];
      if (!value) throw new Error(`add a query value for ${name}`);
      query[name] = value();
    }
  }
  return { ...query, ...extra };
}

/** CONVENTIONS §4: the smallest valid body of each collection-level POST, for an organization. */
const minimalCreateBodies: Record<string, (organizationId: string) => Record<string, unknown>> = {
  createProject: (organization_id) => ({ organization_id, title: 'Contract project' }),
  createCanvas: (organization_id) => ({ organization_id }),
  createAsset: (organization_id) => ({ organization_id, type: 'document' }),
  importAssetFromLink: (organization_id) => ({ organization_id, url: 'https://example.com/article' }),
  createAssetUpload: (organization_id) => ({ organization_id, filename: 'contract.txt', mime_type: 'text/plain', size: 1 }),
  createConversation: (organization_id) => ({ organization_id }),
  createSkill: (organization_id) => ({ organization_id, name: 'Contract skill', description: '', body: 'x' }),
  queryUsageReport: (organization_id) => ({ organization_id, from: '2026-01-01', to: '2026-01-31', group_by: 'day' }),
  queryInventoryReport: (organization_id) => ({ organization_id }),
  createConnector: (organization_id) => ({ organization_id, type: 'http', name: `Contract connector ${randomUUID().slice(0, 8)}` }),
  runSearch: (organization_id) => ({ organization_id, query: 'contract' }),
  quoteGeneration: (organization_id) => ({ organization_id, kind: 'image', prompt: 'A contract probe' }),
  createGeneration: (organization_id) => ({ organization_id, kind: 'image', prompt: 'A contract probe' }),
  createScheduledTask: (organization_id) => ({ organization_id, title: 'Contract task', prompt: 'Probe', schedule: { cron: '0 9 * * *', timezone: 'UTC' } }),
  createPause: (organization_id) => ({ organization_id, scope: 'organization', queue: 'asset.enrich.v1', reason: 'route contract' }),
  runReadUrl: (organization_id) => ({ organization_id, url: 'https://example.com/article' }),
  // Every social read and its quote: the catalog's own sample input (test/support/read-samples.ts).
  ...Object.fromEntries(
    apiRoutes
      .filter((route) => route.tag === 'Social' && route.method === 'post')
      .map((route) => {
        const operation = socialOperation(route.path.split('/')[2]!)!;
        return [route.operationId, (organization_id: string) => ({ organization_id, input: sampleInput(operation) })];
      }),
  ),
};

function minimalCreateBody(route: AnyRoute, organizationId: string): Record<string, unknown> {
  const body = minimalCreateBodies[route.operationId];
  if (!body) throw new Error(`add a minimal body for ${route.operationId}`);
  return body(organizationId);
}

const ONE_PIXEL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=';

/**
 * Valid bodies for the other operations that take one, so a request reaches what the property
 * is about instead of stopping at validation. An operation in neither table gets `{}`, which must
 * then be valid for it ("add a valid body for …" otherwise).
 */
const validBodies: Record<string, (f: Record<string, string>) => Record<string, unknown>> = {
  createOrganization: () => ({ name: 'Contract Co' }),
  updateOrganization: () => ({ name: 'Renamed by an outsider' }),
  putOrganizationLogo: () => ({ content_type: 'image/png', data: ONE_PIXEL_PNG }),
  changeOrganizationMemberRole: () => ({ role: 'admin' }),
  updateMemberPersonalization: () => ({ display_name: 'Outsider' }),
  saveOrganizationRole: () => ({ key: 'outsiders', name: 'Outsiders', permissions: ['members.view'] }),
  updateAlertPolicy: () => ({ enabled: false }),
  createInvitation: () => ({ email: `probe_${randomUUID().slice(0, 8)}@example.test`, role: 'member' }),
  updateInvitation: () => ({ role: 'admin' }),
  updateGeneralAccess: () => ({ visibility: 'workspace' }),
  createGrant: (f) => ({ user_id: f.user_id, role: 'editor' }),
  updateGrant: () => ({ role: 'editor' }),
  updateProject: () => ({ title: 'Renamed' }),
  addProjectAsset: (f) => ({ asset_id: f.asset_id }),
  addProjectCanvas: (f) => ({ canvas_id: f.canvas_id }),
  addProjectConversation: (f) => ({ conversation_id: f.conversation_id }),
  addProjectSkill: (f) => ({ skill_id: f.skill_id }),
  updateCanvas: () => ({ title: 'Renamed' }),
  updateAsset: () => ({ title: 'Renamed' }),
  beginChatRunCredits: () => ({ run_id: randomUUID(), amount: 1 }),
  captureChatRunCredits: () => ({ run_id: randomUUID(), amount: 1 }),
  settleChatRunCredits: () => ({ run_id: randomUUID() }),
  adjustCredits: () => ({ amount: 1, reason: 'probe' }),
  updateMemberCredits: () => ({ spending_limit: null }),
  changeSubscriptionPlan: () => ({ plan: 'pro' }),
  createBillingCustomer: () => ({ name: 'Outsider', email: 'outsider@example.test' }),
  updateConversation: () => ({ title: 'Renamed' }),
  postConversationMessage: () => ({ content: 'Hello from the route contract' }),
  forkConversation: () => ({ message_id: randomUUID() }),
  stampConversationMessageCredits: () => ({ message_id: randomUUID() }),
  saveConversationRunSnapshot: () => ({ content: 'partial' }),
  answerConversationRunApprovals: () => ({ decisions: [{ tool_call_id: 'call_1', approve: true }] }),
  updateSkill: () => ({ name: 'Renamed' }),
  createOrganizationSkill: () => ({ name: 'Outsider skill', description: '', body: 'x' }),
  updateConnector: () => ({ name: 'Renamed' }),
  setConnectorCredential: () => ({ secret: 'route-contract-probe-secret' }),
  setConnectorOAuthClient: () => ({ client_id: 'route-contract-client' }),
  putChatModelCopy: (f) => ({ organization_id: f.organization_id, enabled: true }),
  updateGeneration: () => ({ title: 'Renamed by an outsider' }),
  updateScheduledTask: () => ({ title: 'Renamed by an outsider' }),
  createSkillListing: (f) => ({ skill_id: f.skill_id }),
  updateSkillListing: () => ({ title: 'Renamed' }),
  changeSkillListingStatus: () => ({ status: 'published' }),
  putSkillListingCover: () => ({ content_type: 'image/png', data: ONE_PIXEL_PNG }),
  addSkillFromCatalog: (f) => ({ organization_id: f.organization_id }),
  previewBulkAction: (f) => ({ action: 'retry', filter: { organization_id: f.organization_id } }),
  createBulkAction: (f) => ({ action: 'retry', filter: { organization_id: f.organization_id }, reason: 'route contract' }),
  revealJobPayload: () => ({ reason: 'route contract' }),
  createWebhookEndpoint: () => ({ url: 'https://example.com/route-contract', event_types: ['*'] }),
  updateWebhookEndpoint: () => ({ description: 'Renamed by an outsider' }),
};

/** A body `route` accepts (ids from `values`; the organization of a create is `values.organization_id`). */
function validBody(route: AnyRoute, values: Record<string, string>): Record<string, unknown> {
  const make = minimalCreateBodies[route.operationId];
  const body = make ? make(values.organization_id!) : (validBodies[route.operationId]?.(values) ?? {});
  const parsed = (route.body as ZodType).safeParse(body);
  const known = make || validBodies[route.operationId];
  if (!parsed.success) throw new Error(`${known ? 'fix' : 'add'} a valid body for ${route.operationId}: ${JSON.stringify(parsed.error.issues)}`);
  return body;
}

/** The empty answer of a list outside its organization, for lists whose envelope is not `{items, next_cursor}`. */
const emptyEnvelopes: Record<string, unknown> = {
  listSocialOperations: { operations: [] },
  listSearchOperations: { operations: [] },
  listSocialTrends: { trends: [] },
};

function emptyEnvelope(route: AnyRoute): unknown {
  const keys = Object.keys(objectSchema(route.response.schema)?.shape ?? {}).sort();
  if (keys.join() === 'items,next_cursor') return { items: [], next_cursor: null };
  if (!(route.operationId in emptyEnvelopes)) throw new Error(`add the empty envelope for ${route.operationId}`);
  return emptyEnvelopes[route.operationId];
}

// ——— assertions ———

const show = (res: ApiResponse) => `${res.status} ${JSON.stringify(res.body)}`;

/** The Error body of CONVENTIONS §3, exactly. */
function expectErrorBody(res: ApiResponse, status: number, code: string): void {
  expect(res.status, show(res)).to.equal(status);
  expect(res.body, show(res)).to.be.an('object');
  expect(Object.keys(res.body).sort(), show(res)).to.deep.equal(['code', 'data', 'message']);
  expect(res.body.code, show(res)).to.equal(code);
  expect(res.body.message, show(res)).to.be.a('string').that.is.not.empty;
  expect(Object.keys(res.body.data), show(res)).to.deep.equal(['issues']);
  expect(res.body.data.issues, show(res)).to.be.an('array');
}

/** Whether the error's message or one of its issues names `name` (as a field, a path or in words). */
const names = (res: ApiResponse, name: string) =>
  String(res.body?.message ?? '').includes(name) ||
  (res.body?.data?.issues ?? []).some(
    (i: { path: unknown[]; message: string }) => i.path.join('.') === name || i.path.includes(name) || i.message.includes(name),
  );

// Methods in the order the outsider probes run: reads first, deletes last (a defect letting an
// outsider delete a fixture must not be reported as failures of the probes after it).
const methodOrder = ['get', 'put', 'patch', 'post', 'delete'];

describe('route contract (every operation of the registry)', () => {
  const ctx = useServer();
  const request = (route: AnyRoute, path: string, options: Parameters<typeof ctx.server.request>[2]) => ctx.server.request(route.method, path, options);

  let owner: TestUser; // owner of the fixture organization
  let restricted: TestUser; // member of it with a custom role lacking resources.create
  let loner: TestUser; // in no organization
  let otherOwner: TestUser; // owner of another organization
  let organization: string;

  before(async () => {
    owner = newUser();
    restricted = newUser();
    loner = newUser();
    otherOwner = newUser();
    const member = newUser();
    [organization] = await Promise.all([createOrganization(ctx.server, owner), createOrganization(ctx.server, otherOwner)]);
    await addMember(ctx.db, organization, member, 'member');
    await ctx
      .db('organization_roles')
      .insert({ organization_id: organization, key: 'contract_no_create', name: 'Members directory only', permissions: ['members.view'] });
    await addMember(ctx.db, organization, restricted, 'contract_no_create');
    // The custom role works (what it grants is granted), so a 403 below is the missing permission.
    const directory = await ctx.server.request('get', `/organizations/${organization}/members`, { token: restricted.token });
    expect(directory.status, show(directory)).to.equal(200);

    const project = await createProject(ctx.server, owner, organization);
    const inProject = { project_id: project.id };
    const [asset, canvas, conversation, skill] = await Promise.all([
      createAsset(ctx.server, owner, organization, inProject),
      createCanvas(ctx.server, owner, organization, inProject),
      createConversation(ctx.server, owner, organization, inProject),
      createSkill(ctx.server, owner, organization, inProject),
    ]);
    const versions = await ctx.server.request('get', `/skills/${skill.id}/versions`, { token: owner.token });
    expect(versions.status, show(versions)).to.equal(200);
    const invitation = await ctx.server.request('post', `/organizations/${organization}/invitations`, {
      token: owner.token,
      body: { email: `invitee_${randomUUID().slice(0, 8)}@example.test`, role: 'member' },
    });
    expect(invitation.status, show(invitation)).to.equal(201);
    const grant = await ctx.server.request('post', `/access/canvas/${canvas.id}/grants`, { token: owner.token, body: { user_id: member.id, role: 'viewer' } });
    expect(grant.status, show(grant)).to.equal(201);
    const connector = await ctx.server.request('post', '/connectors', {
      token: owner.token,
      body: { organization_id: organization, type: 'http', name: 'Fixture connector' },
    });
    expect(connector.status, show(connector)).to.equal(201);
    const listing = await ctx.server.request('post', '/skill-listings', { token: owner.token, body: { skill_id: skill.id } });
    expect(listing.status, show(listing)).to.equal(201);
    // No worker runs here: the generation stays queued, which is all the probes need.
    const generation = await ctx.server.request('post', '/generations', {
      token: owner.token,
      body: { organization_id: organization, kind: 'text', prompt: 'Fixture generation' },
    });
    expect(generation.status, show(generation)).to.equal(201);
    const task = await ctx.server.request('post', '/scheduled-tasks', { token: owner.token, body: minimalCreateBodies.createScheduledTask!(organization) });
    expect(task.status, show(task)).to.equal(201);
    const endpoint = await ctx.server.request('post', `/organizations/${organization}/webhook-endpoints`, {
      token: owner.token,
      body: validBodies.createWebhookEndpoint!({}),
    });
    expect(endpoint.status, show(endpoint)).to.equal(201);
    const ping = await ctx.server.request('post', `/organizations/${organization}/webhook-endpoints/${endpoint.body.webhook_endpoint.id}/test`, {
      token: owner.token,
    });
    expect(ping.status, show(ping)).to.equal(202);
    const upload = await ctx.server.request('post', '/assets/uploads', { token: owner.token, body: minimalCreateBodies.createAssetUpload!(organization) });
    expect(upload.status, show(upload)).to.equal(201);

    const existing: Record<string, string> = {
      organization_id: organization,
      user_id: member.id,
      project_id: project.id,
      asset_id: asset.id,
      canvas_id: canvas.id,
      conversation_id: conversation.id,
      skill_id: skill.id,
      version_id: versions.body.items[0].id,
      invitation_id: invitation.body.invitation.id,
      resource_id: canvas.id,
      grant_id: grant.body.id,
      doc_id: asset.id, // an asset of type document
      connector_id: connector.body.connector.id,
      listing_id: listing.body.listing.id,
      slug: listing.body.listing.slug,
      generation_id: generation.body.generation.id,
      scheduled_task_id: task.body.scheduled_task.id,
      endpoint_id: endpoint.body.webhook_endpoint.id,
      delivery_id: ping.body.webhook_delivery.id,
      upload_id: upload.body.upload.id,
      ...(await consoleFixtures(organization, task.body.scheduled_task.id)),
    };
    for (const [name, value] of Object.entries(existing)) {
      expect(value, `fixture ${name}`).to.be.a('string').that.is.not.empty;
      fixtures[name]!.existing = value;
    }
  });

  /** The invitation's e-mail job, a bulk action and a pause of the fixture organization, and its scheduled task's schedule key. */
  async function consoleFixtures(organizationId: string, taskId: string) {
    const job = (await ctx.db('pgboss.job').where({ group_id: organizationId }).first('id')) as { id: string };
    const [bulk] = await ctx
      .db('bulk_actions')
      .insert({
        action: 'retry',
        filter: '{}',
        organization_id: organizationId,
        total: 0,
        created_by: owner.id,
        state: 'completed',
        finished_at: ctx.db.fn.now(),
      })
      .returning('id');
    const [pause] = await ctx
      .db('job_pauses')
      .insert({ scope: 'organization', queue: 'asset.enrich.v1', organization_id: organizationId, reason: 'route contract fixture', created_by: owner.id })
      .returning('id');
    return {
      job_id: job.id,
      bulk_action_id: bulk.id as string,
      pause_id: pause.id as string,
      schedule_key: `task:${taskId}`,
      request_id: 'route-contract-request',
    };
  }

  it('names only registered operations in its exceptions', () => {
    const operations = new Set(apiRoutes.map((r) => r.operationId));
    for (const e of exceptions) expect(operations.has(e.operationId), `${e.operationId} (${e.property})`).to.equal(true);
  });

  describe('1. without a token: 401 unauthorized', () => {
    for (const route of apiRoutes.filter((r) => !excepted('no-token', r))) {
      it(title(route), async () => {
        const res = await request(route, pathOf(route, missingValues(route)), { query: minimalQuery(route) });
        expectErrorBody(res, 401, 'unauthorized');
        expect(res.body.data.issues).to.deep.equal([]);
      });
    }
  });

  describe('2. an unknown body field: 400 naming it', () => {
    // Only bodies that are (or validate first as) a zod object have fields to add to; an
    // operation without a body refuses any body on its own (route.ts), tested in input-safety.
    for (const route of apiRoutes.filter((r) => objectSchema(r.body) && !excepted('unknown-body-field', r))) {
      it(title(route), async () => {
        // A valid body but for the one field, so the field is what is refused; missing ids (and a
        // missing organization), so that were it accepted, nothing existing could change.
        const body = { ...validBody(route, { ...allExisting(), organization_id: randomUUID() }), zz_unknown_field: 1 };
        const res = await request(route, pathOf(route, missingValues(route)), { token: owner.token, query: minimalQuery(route), body });
        expectErrorBody(res, 400, 'validation_failed');
        expect(names(res, 'zz_unknown_field'), show(res)).to.equal(true);
      });
    }
  });

  describe('3. an unknown query parameter: 400 naming it', () => {
    for (const route of apiRoutes.filter((r) => !excepted('unknown-query-parameter', r))) {
      it(title(route), async () => {
        const res = await request(route, pathOf(route, missingValues(route)), { token: owner.token, query: minimalQuery(route, { zz_unknown_param: '1' }) });
        expectErrorBody(res, 400, 'validation_failed');
        expect(names(res, 'zz_unknown_param'), show(res)).to.equal(true);
      });
    }
  });

  describe('4. a path id that is not a UUID where its schema wants one: 400 naming params.<name>', () => {
    for (const route of apiRoutes.filter((r) => pathParams(r).some((n) => isUuidParam(r, n)) && !excepted('non-uuid-path-id', r))) {
      const uuidParams = pathParams(route).filter((n) => isUuidParam(route, n));
      it(`${title(route)} (${uuidParams.join(', ')})`, async () => {
        for (const name of uuidParams) {
          const res = await request(route, pathOf(route, { ...missingValues(route), [name]: 'not-a-uuid' }), {
            token: owner.token,
            query: minimalQuery(route),
          });
          expectErrorBody(res, 400, 'validation_failed');
          expect(names(res, `params.${name}`), `${name}: ${show(res)}`).to.equal(true);
        }
      });
    }
  });

  describe('6. a create needs resources.create: 403 for a member without it', () => {
    for (const route of apiRoutes.filter((r) => isCreate(r) && !excepted('create-needs-permission', r))) {
      it(title(route), async () => {
        const res = await request(route, route.path, { token: restricted.token, body: minimalCreateBody(route, organization) });
        expectErrorBody(res, 403, 'forbidden');
        // The same body from a member holding the permission creates: the 403 was the permission's.
        const allowed = await request(route, route.path, { token: owner.token, body: minimalCreateBody(route, organization) });
        expect(allowed.status, `the owner: ${show(allowed)}`).to.equal(201);
      });
    }
  });

  describe('7. a collection-level operation never answers 404 (outside, or for an organization that does not exist)', () => {
    for (const route of apiRoutes.filter((r) => isCollectionLevel(r) && !excepted('collection-never-404', r))) {
      const inBody = bodyKeys(route).includes('organization_id');
      it(`${title(route)} → ${route.method === 'get' && route.authorize?.kind !== 'console' ? '200 empty page' : '403'}`, async () => {
        const cases = [
          { who: 'a user in no organization', token: loner.token, org: organization },
          { who: 'a member of another organization', token: otherOwner.token, org: organization },
          { who: 'a user in no organization, unknown organization', token: loner.token, org: randomUUID() },
          { who: 'a member of another organization, unknown organization', token: otherOwner.token, org: randomUUID() },
        ];
        const answers = await Promise.all(
          cases.map(({ token, org }) =>
            inBody
              ? request(route, route.path, { token, query: minimalQuery(route), body: minimalCreateBody(route, org) })
              : request(route, route.path, { token, query: minimalQuery(route, { organization_id: org }) }),
          ),
        );
        // Lists page what the caller can read (empty outside); the job console refuses outsiders (403) like a create.
        const lists = route.method === 'get' && route.authorize?.kind !== 'console';
        const expected = lists ? emptyEnvelope(route) : undefined;
        answers.forEach((res, i) => {
          const context = `${cases[i]!.who}: ${show(res)}`;
          if (lists) {
            expect(res.status, context).to.equal(200);
            expect(res.body, context).to.deep.equal(expected);
          } else {
            expectErrorBody(res, 403, 'forbidden');
            // The message may name the organization the caller sent; beyond that, one answer for all.
            const sameFor = (r: ApiResponse, org: string) => JSON.parse(JSON.stringify(r.body).replaceAll(org, '<organization_id>'));
            expect(sameFor(res, cases[i]!.org), context).to.deep.equal(sameFor(answers[0]!, cases[0]!.org));
          }
        });
      });
    }
  });

  // Runs last: it is the only property that sends requests at existing resources.
  describe('5. an outsider gets for existing ids exactly what a missing id gets (404 when there is no body)', () => {
    const byIdRoutes = apiRoutes
      .filter((r) => pathParams(r).length > 0 && !excepted('outsider-like-missing', r))
      .sort((a, b) => methodOrder.indexOf(a.method) - methodOrder.indexOf(b.method));
    for (const route of byIdRoutes) {
      it(title(route), async () => {
        const existing = existingValues(route);
        // All ids missing, then (with several ids) each one alone missing beside existing others.
        const variants: { label: string; values: Record<string, string> }[] = [
          { label: 'existing ids', values: existing },
          { label: 'missing ids', values: missingValues(route) },
        ];
        const ids = pathParams(route).filter((n) => !fixtureFor(n).fixedKind);
        if (ids.length > 1) for (const n of ids) variants.push({ label: `missing ${n} only`, values: { ...existing, [n]: fixtureFor(n).missing() } });
        const outsiders = [
          { who: 'a user in no organization', user: loner },
          { who: 'a member of another organization', user: otherOwner },
        ];
        // A body that passes validation, so the answer is authorization's, not the validator's.
        const body = route.body ? validBody(route, allExisting()) : undefined;
        for (const { who, user } of outsiders) {
          const answers = await Promise.all(
            variants.map(({ values }) => request(route, pathOf(route, values), { token: user.token, query: minimalQuery(route), body })),
          );
          const reference = answers[1]!; // all missing
          answers.forEach((res, i) => {
            const context = `${who}, ${variants[i]!.label}: ${show(res)} (missing ids: ${show(reference)})`;
            expect(res.status, context).to.equal(reference.status);
            expect(res.body, context).to.deep.equal(reference.body);
          });
          // The job console's lookups take a search key, not a resource id: an outsider is refused before any lookup.
          if (!route.body) route.authorize?.kind === 'console' ? expectErrorBody(reference, 403, 'forbidden') : expectErrorBody(reference, 404, 'not_found');
        }
      });
    }
  });
});
