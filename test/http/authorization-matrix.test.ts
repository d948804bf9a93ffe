import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { ZodObject, ZodPipe } from 'zod';
import { capabilities, roles } from '../../src/access/types.ts';
import { resourceTypes as resourceTypeDeclarations } from '../../src/app/resource-types.ts';
import { compactAuthorization, describeAuthorization } from '../../src/http/authorization-text.ts';
import { type Authorization, enforcedBy, type FieldRule, recordNames } from '../../src/http/authorize.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { organizationPermissions } from '../../src/members/permissions.ts';
import { apiRoutes, openApiDocument, plumbingRoutes, webhookRoutes } from '../../src/app/routes.ts';
import { grant } from '../access/fixtures.ts';
import { createAsset, createOrganization, createSkill, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import type { ApiResponse } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

/**
 * Who may call what, for every operation, from the declarations themselves (src/http/authorize.ts).
 *
 * 1. The matrix: every route's declaration in its compact form, with who enforces it, checked
 *    against test/http/authorization-matrix.txt — a change of who may call an operation shows in
 *    review as a line of that file. Rewrite it with `UPDATE_AUTHORIZATION_MATRIX=1`.
 * 2. The vocabulary: every declaration is made of known kinds whose parameters name real things
 *    (permissions, capabilities, resource types, records, the route's own parameters and body
 *    fields): no free text decides anything.
 * 3. The answers: for a sample of each kind of declaration, the status every kind of caller gets
 *    (organization owner, admin, member, viewer grant, editor grant, outsider, operator) is the
 *    one the declaration says.
 */

const allRoutes: readonly AnyRoute[] = [...plumbingRoutes, ...webhookRoutes, ...apiRoutes];
/** The registered resource type names (src/app/resource-types.ts). */
const resourceTypes = resourceTypeDeclarations.map((declaration) => declaration.type);
const matrixFile = new URL('./authorization-matrix.txt', import.meta.url);

const matrixLine = (route: AnyRoute) =>
  route.authorize ? `${route.operationId} → ${compactAuthorization(route.authorize)}  [${enforcedBy(route.authorize)}]` : `${route.operationId} → (none)`;

/** The fields of an object schema, also behind a transform (`z.object(…).transform(…)`). */
const shapeKeys = (schema: unknown): string[] =>
  schema instanceof ZodPipe ? shapeKeys(schema.in) : schema instanceof ZodObject ? Object.keys(schema.shape) : [];

/** Every problem of one declaration: unknown kinds, parameters naming nothing real. */
function problems(route: AnyRoute, authorization: Authorization, where = 'authorize'): string[] {
  const params = shapeKeys(route.params);
  const body = shapeKeys(route.body);
  const found: string[] = [];
  const bad = (what: string) => found.push(`${route.operationId} ${where}: ${what}`);
  const needs = (need: unknown) => (need === undefined ? [] : typeof need === 'string' ? [need] : (need as string[]));
  const checkNeed = (need: unknown) => {
    for (const permission of needs(need)) if (!(organizationPermissions as readonly string[]).includes(permission)) bad(`unknown permission ${permission}`);
  };
  const checkType = (type: unknown) => {
    if (typeof type === 'string') {
      if (!(resourceTypes as readonly string[]).includes(type)) bad(`unknown resource type ${type}`);
    } else if (!params.includes((type as { param: string }).param)) bad(`resource type from a path parameter it does not have`);
  };
  const a = authorization;
  switch (a.kind) {
    case 'public':
    case 'signedIn':
    case 'operator':
      // The note says why, for the reader; the kind alone decides.
      if (!a.note || a.note.length > 100) bad(`${a.kind} needs a short note`);
      break;
    case 'member':
      checkNeed(a.need);
      if (a.in !== 'query' && !params.includes('organization_id')) bad('member() without {organization_id} in the path');
      if (a.in === 'query' && !shapeKeys(route.query).includes('organization_id')) bad('member(in: query) without organization_id in the query');
      if (a.self !== undefined && !params.includes(a.self)) bad(`self names ${a.self}, not a path parameter`);
      break;
    case 'within':
      checkNeed(a.need);
      if (!shapeKeys(a.from === 'body' ? route.body : route.query).includes('organization_id')) bad(`within(${a.from}) without organization_id there`);
      break;
    case 'listing':
    case 'console':
      break;
    case 'resource':
      checkType(a.type);
      if (!(capabilities as readonly string[]).includes(a.capability)) bad(`unknown capability ${a.capability}`);
      if (!(a.in === 'body' ? body : params).includes(a.param)) bad(`resource id ${a.param} is not a ${a.in === 'body' ? 'body field' : 'path parameter'}`);
      break;
    case 'resourceRole':
      checkType(a.type);
      if (!(roles as readonly string[]).includes(a.role)) bad(`unknown role ${a.role}`);
      if (!params.includes(a.param)) bad(`resource id ${a.param} is not a path parameter`);
      break;
    case 'recordMember':
      checkNeed(a.need);
      if (!(recordNames as readonly string[]).includes(a.record)) bad(`unknown record ${a.record}`);
      break;
    case 'holder':
    case 'recordIs':
      if (!(recordNames as readonly string[]).includes(a.record)) bad(`unknown record ${a.record}`);
      break;
    case 'linked':
      if (!(recordNames as readonly string[]).includes(a.record)) bad(`unknown record ${a.record}`);
      for (const type of a.types) checkType(type);
      break;
    case 'self':
      if (!params.includes(a.param)) bad(`self names ${a.param}, not a path parameter`);
      break;
    case 'authorityOver':
      if ('body' in a.role ? !body.includes(a.role.body) : !(recordNames as readonly string[]).includes(a.role.record))
        bad('authority over a role named nowhere');
      break;
    case 'holdsPermissions':
      if (!body.includes(a.field)) bad(`holdsPermissions(${a.field}), which the body does not have`);
      break;
    case 'allOf':
    case 'anyOf':
      if (a.of.length < 2) bad(`${a.kind} of fewer than two`);
      for (const part of a.of) found.push(...problems(route, part, where));
      break;
    case 'named':
      found.push(...problems(route, a.rule, `${where} ${a.name}`));
      break;
    default:
      bad(`unknown kind ${(a as { kind: string }).kind} (free text is not a declaration)`);
  }
  for (const [field, rule] of Object.entries(a.fields ?? {}) as [string, FieldRule][]) {
    if (!body.includes(field)) bad(`field rule for ${field}, which the body does not have`);
    found.push(...problems(route, rule.need, `${where} fields.${field}`));
  }
  return found;
}

describe('authorization matrix', () => {
  it('every operation declares who may call it, and the matrix is the checked-in one', () => {
    const matrix = `${allRoutes.map(matrixLine).join('\n')}\n`;
    if (process.env.UPDATE_AUTHORIZATION_MATRIX) writeFileSync(matrixFile, matrix);
    if (process.env.PRINT_AUTHORIZATION_MATRIX) console.log(matrix);
    expect(allRoutes.filter((r) => !r.authorize).map((r) => r.operationId)).to.deep.equal([]);
    expect(matrix).to.equal(readFileSync(matrixFile, 'utf8'));
  });

  it('open routes, and only they, declare publicAccess', () => {
    const mismatched = allRoutes.filter((r) => (r.public === true) !== (r.authorize?.kind === 'public'));
    expect(mismatched.map((r) => r.operationId)).to.deep.equal([]);
  });

  it('every declaration is data: known kinds whose parameters name real permissions, capabilities, records, parameters and fields', () => {
    expect(allRoutes.flatMap((route) => problems(route, route.authorize!))).to.deep.equal([]);
  });

  it('the OpenAPI description of each operation states its declaration, generated from it (prose, and `x-authorization` in the compact form)', () => {
    type Operation = { operationId: string; description?: string; 'x-authorization'?: string };
    const document = openApiDocument('test') as unknown as { paths: Record<string, Record<string, Operation>> };
    const operations = new Map(Object.values(document.paths).flatMap((path) => Object.values(path).map((op) => [op.operationId, op] as const)));
    for (const route of allRoutes) {
      const operation = operations.get(route.operationId);
      expect(operation?.description, route.operationId).to.include(`**Authorization:** ${describeAuthorization(route.authorize!)}`);
      expect(operation?.['x-authorization'], route.operationId).to.equal(compactAuthorization(route.authorize!));
    }
  });

  it('no description is free text: each is generated without a leftover placeholder or an empty part', () => {
    for (const route of allRoutes) {
      const text = describeAuthorization(route.authorize!);
      expect(text, route.operationId).to.not.match(/undefined|\(\)|\.\./);
    }
  });
});

// 3. The answers of each kind of declaration to each kind of caller.

type CallerName = 'owner' | 'admin' | 'member' | 'viewer' | 'editor' | 'outsider' | 'operator';
const callerNames: CallerName[] = ['owner', 'admin', 'member', 'viewer', 'editor', 'outsider', 'operator'];

interface World {
  org: string;
  callers: Record<CallerName, TestUser>;
}

/** What a sample acts on; the viewer and editor callers get grants of these roles on `resource`. */
interface Subject {
  resource?: { type: string; id: string };
  [key: string]: unknown;
}

interface Sample {
  /** The operation and its declaration, as the matrix prints it: the sample fails when the declaration changes. */
  operationId: string;
  declaration: string;
  /** Arranges what the request acts on: once, or per caller when the request changes it. */
  subject?: (world: World) => Promise<Subject>;
  fresh?: boolean;
  request: (subject: Subject, caller: TestUser, world: World) => { method: string; path: string; body?: Record<string, unknown> };
  expect: Record<CallerName, number>;
}

describe('authorization answers by kind of declaration and caller', () => {
  const ctx = useServer({}, { pool: 4 });
  const world = {} as World;

  before(async () => {
    const owner = newUser();
    world.org = await createOrganization(ctx.server, owner);
    world.callers = {
      owner,
      admin: await newMember(ctx.db, world.org, 'admin'),
      member: await newMember(ctx.db, world.org),
      viewer: await newMember(ctx.db, world.org),
      editor: await newMember(ctx.db, world.org),
      outsider: newUser(),
      operator: newOperator(),
    };
  });

  const ok = (res: ApiResponse, what: string) => {
    if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  /** A private asset of the organization's owner, shared with the viewer and the editor. */
  const sharedAsset = async (w: World): Promise<Subject> => {
    const asset = await createAsset(ctx.server, w.callers.owner, w.org);
    return { resource: { type: 'asset', id: asset.id } };
  };

  const samples: Sample[] = [
    {
      operationId: 'getHealth',
      declaration: 'public',
      request: () => ({ method: 'get', path: '/healthz' }),
      expect: { owner: 200, admin: 200, member: 200, viewer: 200, editor: 200, outsider: 200, operator: 200 },
    },
    {
      operationId: 'listPublicModels',
      declaration: 'signedIn',
      request: () => ({ method: 'get', path: '/models/public' }),
      expect: { owner: 200, admin: 200, member: 200, viewer: 200, editor: 200, outsider: 200, operator: 200 },
    },
    {
      operationId: 'listWorkers',
      declaration: 'operator',
      request: () => ({ method: 'get', path: '/ops/workers' }),
      expect: { owner: 403, admin: 403, member: 403, viewer: 403, editor: 403, outsider: 403, operator: 200 },
    },
    {
      operationId: 'listInvitations',
      declaration: 'member(invitations.manage)',
      request: (_, __, w) => ({ method: 'get', path: `/organizations/${w.org}/invitations` }),
      expect: { owner: 200, admin: 200, member: 403, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
    {
      operationId: 'getOrganizationMember',
      declaration: 'member(members.view, self: user_id)',
      request: (_, caller, w) => ({ method: 'get', path: `/organizations/${w.org}/members/${caller.id}` }),
      expect: { owner: 200, admin: 200, member: 200, viewer: 200, editor: 200, outsider: 404, operator: 404 },
    },
    {
      operationId: 'putChatModelCopy',
      declaration: 'within(body, chat_models.manage)',
      request: (_, __, w) => ({ method: 'put', path: '/chat-models/unknown-model/copy', body: { organization_id: w.org, enabled: true } }),
      // Owners and admins pass the gate and meet the unknown model (404); everyone else is refused first.
      expect: { owner: 404, admin: 404, member: 403, viewer: 403, editor: 403, outsider: 403, operator: 403 },
    },
    {
      operationId: 'listAssets',
      declaration: 'listing(query)',
      subject: sharedAsset,
      request: (_, __, w) => ({ method: 'get', path: `/assets?organization_id=${w.org}` }),
      expect: { owner: 200, admin: 200, member: 200, viewer: 200, editor: 200, outsider: 200, operator: 200 },
    },
    {
      operationId: 'listQueues',
      declaration: 'console(query)',
      request: (_, caller, w) => ({ method: 'get', path: caller === w.callers.operator ? '/ops/queues' : `/ops/queues?organization_id=${w.org}` }),
      expect: { owner: 200, admin: 200, member: 403, viewer: 403, editor: 403, outsider: 403, operator: 200 },
    },
    {
      operationId: 'getAsset',
      declaration: 'resource(asset, read, asset_id)',
      subject: sharedAsset,
      request: (s) => ({ method: 'get', path: `/assets/${s.resource!.id}` }),
      expect: { owner: 200, admin: 200, member: 404, viewer: 200, editor: 200, outsider: 404, operator: 404 },
    },
    {
      operationId: 'updateAsset',
      declaration: 'resource(asset, edit, asset_id)',
      subject: sharedAsset,
      request: (s) => ({ method: 'patch', path: `/assets/${s.resource!.id}`, body: { title: 'Renamed' } }),
      expect: { owner: 200, admin: 200, member: 404, viewer: 403, editor: 200, outsider: 404, operator: 404 },
    },
    {
      operationId: 'deleteAsset',
      declaration: 'resource(asset, delete, asset_id)',
      subject: sharedAsset,
      fresh: true,
      request: (s) => ({ method: 'delete', path: `/assets/${s.resource!.id}` }),
      expect: { owner: 204, admin: 204, member: 404, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
    {
      operationId: 'updateGeneralAccess',
      declaration:
        'resource({resource_type}, read, resource_id) fields{visibility: resource({resource_type}, change_general_access, resource_id); workspace_role: resource({resource_type}, change_general_access, resource_id)}',
      subject: sharedAsset,
      fresh: true,
      request: (s) => ({ method: 'patch', path: `/access/asset/${s.resource!.id}`, body: { visibility: 'workspace' } }),
      expect: { owner: 200, admin: 200, member: 404, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
    {
      operationId: 'updateScheduledTask',
      declaration:
        'resource(scheduled_task, edit, scheduled_task_id) fields{max_credits_per_run raised: resourceRole(scheduled_task, owner, scheduled_task_id)}',
      subject: async (w) => {
        const task = ok(
          await ctx.server.request('post', '/scheduled-tasks', {
            token: w.callers.owner.token,
            body: {
              organization_id: w.org,
              title: 'Brief',
              prompt: 'Name three colours.',
              schedule: { cron: '0 7 * * *', timezone: 'UTC' },
              max_credits_per_run: 20,
            },
          }),
          'create scheduled task',
        );
        return { resource: { type: 'scheduled_task', id: task.scheduled_task.id } };
      },
      fresh: true,
      request: (s) => ({ method: 'patch', path: `/scheduled-tasks/${s.resource!.id}`, body: { max_credits_per_run: 21 } }),
      // Editing is the editor's; raising the cap needs the owner role (organization owners and admins hold it).
      expect: { owner: 200, admin: 200, member: 404, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
    {
      operationId: 'getConnector',
      declaration: 'recordMember(connector)',
      subject: async (w) => {
        const connector = ok(
          await ctx.server.request('post', '/connectors', {
            token: w.callers.owner.token,
            body: { organization_id: w.org, type: 'http', name: `Connector ${Math.random().toString(36).slice(2, 8)}` },
          }),
          'create connector',
        );
        return { connector: connector.connector.id };
      },
      request: (s) => ({ method: 'get', path: `/connectors/${s.connector}` }),
      expect: { owner: 200, admin: 200, member: 200, viewer: 200, editor: 200, outsider: 404, operator: 404 },
    },
    {
      operationId: 'updateConnector',
      declaration: 'recordMember(connector, connectors.manage)',
      subject: async (w) => {
        const connector = ok(
          await ctx.server.request('post', '/connectors', {
            token: w.callers.owner.token,
            body: { organization_id: w.org, type: 'http', name: `Connector ${Math.random().toString(36).slice(2, 8)}` },
          }),
          'create connector',
        );
        return { connector: connector.connector.id };
      },
      fresh: true,
      request: (s) => ({ method: 'patch', path: `/connectors/${s.connector}`, body: { name: `Renamed ${Math.random().toString(36).slice(2, 8)}` } }),
      expect: { owner: 200, admin: 200, member: 403, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
    {
      operationId: 'getInvitation',
      declaration: 'anyOf(holder(invitation.email), recordMember(invitation, invitations.manage))',
      subject: async (w) => {
        // The invitation is addressed to the outsider: the invitee, who is not (yet) a member.
        const invitation = ok(
          await ctx.server.request('post', `/organizations/${w.org}/invitations`, {
            token: w.callers.owner.token,
            body: { email: w.callers.outsider.email, role: 'member' },
          }),
          'create invitation',
        );
        return { invitation: invitation.invitation.id };
      },
      request: (s, _, w) => ({ method: 'get', path: `/organizations/${w.org}/invitations/${s.invitation}` }),
      expect: { owner: 200, admin: 200, member: 403, viewer: 403, editor: 403, outsider: 200, operator: 404 },
    },
    {
      operationId: 'getSkillListing',
      declaration: 'anyOf(operator, holder(skill_listing.created_by_id), recordIs(skill_listing.status=published))',
      subject: async (w) => {
        const skill = await createSkill(ctx.server, w.callers.owner, w.org, { description: 'A skill', body: 'Do the thing.' });
        const listing = ok(
          await ctx.server.request('post', '/skill-listings', { token: w.callers.owner.token, body: { skill_id: skill.id } }),
          'create listing',
        );
        return { listing: listing.listing.id, resource: { type: 'skill', id: skill.id } };
      },
      request: (s) => ({ method: 'get', path: `/skill-listings/${s.listing}` }),
      // A draft: its author (the owner) and operators; listings belong to no organization, so its admins do not see it.
      expect: { owner: 200, admin: 404, member: 404, viewer: 404, editor: 404, outsider: 404, operator: 200 },
    },
    {
      operationId: 'updateSkillListing',
      declaration:
        'allOf(anyOf(operator, holder(skill_listing.created_by_id)), anyOf(operator, recordIs(skill_listing.status=draft), publisher(skill_listing))) fields{verified: operator; rank: operator}',
      subject: async (w) => {
        const skill = await createSkill(ctx.server, w.callers.owner, w.org, { description: 'A skill', body: 'Do the thing.' });
        const listing = ok(
          await ctx.server.request('post', '/skill-listings', { token: w.callers.owner.token, body: { skill_id: skill.id } }),
          'create listing',
        );
        return { listing: listing.listing.id };
      },
      request: (s) => ({ method: 'patch', path: `/skill-listings/${s.listing}`, body: { rank: 5 } }),
      // `rank` is the operators' even for the listing's author.
      expect: { owner: 403, admin: 404, member: 404, viewer: 404, editor: 404, outsider: 404, operator: 200 },
    },
    {
      operationId: 'getMemberPersonalization',
      declaration: 'allOf(member(), self(user_id))',
      request: (_, __, w) => ({ method: 'get', path: `/organizations/${w.org}/members/${w.callers.owner.id}/personalization` }),
      // The owner's own personalization: theirs alone, whatever another member's role.
      expect: { owner: 200, admin: 403, member: 403, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
    {
      operationId: 'changeOrganizationMemberRole',
      declaration: 'allOf(member(members.manage), authorityOver(member.role)) fields{role: authorityOver(body.role)}',
      subject: async (w) => ({ target: (await newMember(ctx.db, w.org)).id }),
      fresh: true,
      request: (s, _, w) => ({ method: 'patch', path: `/organizations/${w.org}/members/${s.target}`, body: { role: 'owner' } }),
      // Granting `owner` is the owners' alone: admins hold members.manage, not that authority.
      expect: { owner: 200, admin: 403, member: 403, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
    {
      operationId: 'saveOrganizationRole',
      declaration: 'allOf(member(roles.manage), authorityOver(role)) fields{permissions: holdsPermissions(body.permissions)}',
      subject: async () => ({ key: `custom-${Math.random().toString(36).slice(2, 10)}` }),
      fresh: true,
      request: (s, _, w) => ({
        method: 'patch',
        path: `/organizations/${w.org}/roles`,
        body: { key: s.key, name: 'Treasurer', permissions: ['billing.manage'] },
      }),
      // Admins manage roles but do not hold billing.manage, so they cannot put it into one.
      expect: { owner: 200, admin: 403, member: 403, viewer: 403, editor: 403, outsider: 404, operator: 404 },
    },
  ];

  it('each sample names a registered operation with the declaration it was written for', () => {
    const compact = new Map(allRoutes.map((r) => [r.operationId, compactAuthorization(r.authorize!)]));
    for (const sample of samples) expect(compact.get(sample.operationId), sample.operationId).to.equal(sample.declaration);
  });

  it('the samples cover every kind of declaration the routes use', () => {
    const kinds = (a: Authorization): string[] => [
      a.kind,
      ...(a.kind === 'allOf' || a.kind === 'anyOf' ? a.of.flatMap(kinds) : a.kind === 'named' ? kinds(a.rule) : []),
      ...Object.values(a.fields ?? {}).flatMap((f) => ['fields', ...kinds(f.need)]),
    ];
    const byId = new Map(allRoutes.map((r) => [r.operationId, r]));
    const covered = new Set(samples.flatMap((s) => kinds(byId.get(s.operationId)!.authorize!)));
    const used = new Set(allRoutes.flatMap((r) => kinds(r.authorize!)));
    expect([...used].filter((kind) => !covered.has(kind)).sort()).to.deep.equal([]);
  });

  for (const sample of samples) {
    describe(`${sample.operationId}: ${sample.declaration}`, () => {
      let shared: Subject | undefined;
      const arrange = async (): Promise<Subject> => {
        const subject = sample.subject ? await sample.subject(world) : {};
        if (subject.resource) {
          const { type, id } = subject.resource;
          await grant(ctx.db, world.org, type, id, world.callers.viewer, 'viewer', world.callers.owner);
          await grant(ctx.db, world.org, type, id, world.callers.editor, 'editor', world.callers.owner);
        }
        return subject;
      };
      for (const name of callerNames) {
        it(`${name} → ${sample.expect[name]}`, async () => {
          if (!sample.fresh && !shared) shared = await arrange();
          const subject = sample.fresh ? await arrange() : shared!;
          const caller = world.callers[name];
          const { method, path, body } = sample.request(subject, caller, world);
          const res = await ctx.server.request(method, path, { token: caller.token, ...(body && { body }) });
          expect(res.status, `${name}: ${res.status} ${JSON.stringify(res.body)}`).to.equal(sample.expect[name]);
          if (sample.operationId === 'listAssets') {
            // A list refuses no one; what each caller sees is what they can read.
            const ids = res.body.items.map((item: { id: string }) => item.id);
            expect(ids.includes((subject.resource as { id: string }).id), name).to.equal(['owner', 'admin', 'viewer', 'editor'].includes(name));
          }
        });
      }
    });
  }
});
