import type { Actor, PermissionNeed } from '../access/actor.ts';
import type { Capability, ResourceType, Role } from '../access/types.ts';
import { forbidden, isAppError, notFound } from '../core/errors.ts';

/**
 * Who may call an operation, declared on the route itself (`authorize:`) as data: the router
 * enforces what it can decide from the request before the handler runs, /openapi.json states it
 * (`describeAuthorization`), and test/http/authorization-matrix.test.ts lists every operation's
 * declaration (`compactAuthorization`). There is no free text: a rule a domain decides on its own
 * record is one of the record kinds below, with its parameters. The kinds:
 *
 *   publicAccess(note)         open without a token: what a route's `public: true` declares (health, a signed webhook)
 *   signedIn(note)             any authenticated caller (creating an organization, a slug suggestion)
 *   operator(note)             operators of the service only (a token claim or a configured id,
 *                              src/auth/operator.ts): 403 to everyone else
 *   member(need?, {self?, in?}) the organization named by `{organization_id}` in the path (or, with
 *                              `in: 'query'`, in the query): 404 to a non-member (it does not exist
 *                              for them), 403 lacking `need`; with `self: 'user_id'` a member may always
 *                              act on their own `{user_id}`
 *   within(from, need?)        a collection-level operation naming `organization_id` in its body or
 *                              query: 403 outside the organization, also for one that does not exist (spec §4.1)
 *   listing(from)              a list: the handler pages only what the caller can read (an empty
 *                              page outside the organization); nothing to refuse up front
 *   console(from)              the job console: operators see every organization; anyone else must
 *                              name `organization_id` and hold `jobs.manage` there (owners and admins)
 *   resource(type, capability, param, {in?, as?})
 *                              one resource by id (a path parameter, or a body field with `in: 'body'`):
 *                              404 when unreadable (like a missing id), 403 when readable without `capability`
 *   resourceRole(type, role, param)
 *                              the caller's role on the resource is at least `role` (owners and admins of
 *                              the organization act as owners)
 *   recordMember(record, need?) members of the organization a record (a connector, a job…) belongs to,
 *                              holding `need`: 404 to non-members (like a missing id), 403 lacking `need`
 *   holder(record, field)      the caller is the user the record names in `field` (its creator, author,
 *                              invitee, grantee)
 *   recordIs(record, field, value)
 *                              a condition on the record's state (a published listing, a pause its organization set)
 *   linked(record, types, capability)
 *                              the caller has `capability` on a resource the record was made for
 *   self(param)                the caller is the user named by the path parameter
 *   authorityOver(role)        authority over a role named in the body or by a record
 *                              (src/members/authority.ts): `owner` only for owners, any other role only for
 *                              a caller whose own role carries every permission of it
 *   holdsPermissions(field)    every permission a body field lists is one the caller's own role carries
 *   allOf(...), anyOf(...)     combinations
 *   named(name, params, rule)  a reusable domain rule under its own name (`creatorOrAdmin`)
 *
 * Any declaration may add `fields` (`withFields`): a body field that needs more than the operation
 * (a cost cap raised, general access, operator-only `rank`), each with when it applies.
 *
 * Who enforces (`enforcedBy`): the router decides `signedIn`, `operator`, `member` in the path,
 * `within`, `console` and a resource's readability before the handler; a resource's other
 * capabilities, every record kind, `anyOf` and field rules need the row, so the service decides
 * them, inside its transaction, on the locked row (src/access/lifecycle.ts). `allOf` is enforced
 * part by part.
 */

/** Records a domain rule reads to decide. */
export const recordNames = [
  'asset_upload',
  'bulk_action',
  'chat_run',
  'connector',
  'generation',
  'grant',
  'invitation',
  'job',
  'member',
  'pause',
  'role',
  'schedule',
  'skill',
  'skill_listing',
] as const;
export type RecordName = (typeof recordNames)[number];

export type ResourceRef = ResourceType | { param: string };
/** Where a role is named: a body field, or a record (a member's role, an invitation's role, a role itself). */
export type RoleRef = { body: string } | { record: RecordName };

export type Rule =
  | { kind: 'public'; note: string }
  | { kind: 'signedIn'; note: string }
  | { kind: 'operator'; note: string }
  | { kind: 'self'; param: string }
  | { kind: 'member'; need?: PermissionNeed | undefined; self?: string | undefined; in?: 'query' | undefined }
  | { kind: 'within'; from: 'body' | 'query'; need?: PermissionNeed | undefined }
  | { kind: 'listing'; from: 'query' | 'body' }
  | { kind: 'console'; from: 'query' | 'body' | 'body.filter' }
  | { kind: 'resource'; type: ResourceRef; capability: Capability; param: string; in?: 'body' | undefined; as?: string | undefined }
  | { kind: 'resourceRole'; type: ResourceRef; role: Role; param: string }
  | { kind: 'recordMember'; record: RecordName; need?: PermissionNeed | undefined }
  | { kind: 'holder'; record: RecordName; field: string }
  | { kind: 'recordIs'; record: RecordName; field: string; value: string }
  | { kind: 'linked'; record: RecordName; types: readonly ResourceType[]; capability: Capability }
  | { kind: 'authorityOver'; role: RoleRef }
  | { kind: 'holdsPermissions'; field: string }
  | { kind: 'allOf'; of: readonly Authorization[] }
  | { kind: 'anyOf'; of: readonly Authorization[] }
  | { kind: 'named'; name: string; params: Readonly<Record<string, string>>; rule: Authorization };

/** When a field rule applies: the field is sent at all, raised above its current value, or set to `value`. */
export type FieldWhen = 'sent' | 'raised' | { setTo: string };
export interface FieldRule {
  when: FieldWhen;
  need: Authorization;
}

export type Authorization = Rule & { fields?: Readonly<Record<string, FieldRule>> | undefined };

export const signedIn = (note: string): Authorization => ({ kind: 'signedIn', note });
/** Open without a token (service plumbing, provider webhooks): what `public: true` on a route declares. */
export const publicAccess = (note: string): Authorization => ({ kind: 'public', note });
/** Operators of the service only (moderating the skill catalog, the job console). */
export const operator = (note: string): Authorization => ({ kind: 'operator', note });
/** The caller is the user named by the path parameter (their own personalization). */
export const self = (param: string): Authorization => ({ kind: 'self', param });
export const member = (need?: PermissionNeed, options: { self?: string; in?: 'query' } = {}): Authorization => ({
  kind: 'member',
  need,
  self: options.self,
  in: options.in,
});
export const within = (from: 'body' | 'query', need?: PermissionNeed): Authorization => ({ kind: 'within', from, need });
/** The job console: operators across organizations, owners and admins (`jobs.manage`) within the organization they name. */
export const jobConsole = (from: 'query' | 'body' | 'body.filter' = 'query'): Authorization => ({ kind: 'console', from });
export const listing = (from: 'query' | 'body' = 'query'): Authorization => ({ kind: 'listing', from });
/** `type` may name the path parameter holding it (`/access/{resource_type}/…`); `as` renames the resource in the 404; `in: 'body'` reads the id from the body. */
export const resource = (type: ResourceRef, capability: Capability, param: string, options: { as?: string; in?: 'body' } = {}): Authorization => ({
  kind: 'resource',
  type,
  capability,
  param,
  in: options.in,
  as: options.as,
});
export const resourceRole = (type: ResourceRef, role: Role, param: string): Authorization => ({ kind: 'resourceRole', type, role, param });
export const recordMember = (record: RecordName, need?: PermissionNeed): Authorization => ({ kind: 'recordMember', record, need });
export const holder = (record: RecordName, field: string): Authorization => ({ kind: 'holder', record, field });
export const recordIs = (record: RecordName, field: string, value: string): Authorization => ({ kind: 'recordIs', record, field, value });
export const linked = (record: RecordName, types: readonly ResourceType[], capability: Capability): Authorization => ({
  kind: 'linked',
  record,
  types,
  capability,
});
/** Authority over a role (src/members/authority.ts): `owner` is the owners' alone; any other role needs every permission it carries. */
export const authorityOver = (role: RoleRef): Authorization => ({ kind: 'authorityOver', role });
/** Every permission a body field lists is one the caller's own role carries. */
export const holdsPermissions = (field: string): Authorization => ({ kind: 'holdsPermissions', field });
/** Nested combinations of the same kind flatten: `anyOf(anyOf(a, b), c)` is `anyOf(a, b, c)`. */
const flatten = (kind: 'allOf' | 'anyOf', of: Authorization[]) => of.flatMap((part) => (part.kind === kind && !part.fields ? part.of : [part]));
export const allOf = (...of: Authorization[]): Authorization => ({ kind: 'allOf', of: flatten('allOf', of) });
export const anyOf = (...of: Authorization[]): Authorization => ({ kind: 'anyOf', of: flatten('anyOf', of) });
export const named = (name: string, params: Record<string, string>, rule: Authorization): Authorization => ({ kind: 'named', name, params, rule });
/** Adds field rules to a declaration: `withFields(authorOrOperator, { rank: sent(operator('…')) })`. */
export const withFields = (authorization: Authorization, fields: Record<string, FieldRule>): Authorization => ({ ...authorization, fields });
export const sent = (need: Authorization): FieldRule => ({ when: 'sent', need });
export const raised = (need: Authorization): FieldRule => ({ when: 'raised', need });
export const setTo = (value: string, need: Authorization): FieldRule => ({ when: { setTo: value }, need });

// Domain rules used by more than one operation, each under its name.

/** The record's creator, or an organization owner/admin (`resources.administer`). */
export const creatorOrAdmin = (record: RecordName): Authorization =>
  named('creatorOrAdmin', { record }, anyOf(holder(record, 'created_by_id'), recordMember(record, 'resources.administer')));
/** Operators of the service, or the members of the record's organization holding `need` (404 for anyone else). */
export const operatorOrRecordMember = (record: RecordName, need: PermissionNeed): Authorization =>
  named('operatorOrRecordMember', { record, need: String(need) }, anyOf(operator('any organization'), recordMember(record, need)));

/** Where an operation is decided: before the handler (router), by the service on the row, or both in turn. */
export type Enforcer = 'router' | 'service' | 'router+service';

export function enforcedBy(authorization: Authorization): Enforcer {
  const own = enforcerOf(authorization);
  return authorization.fields && own === 'router' ? 'router+service' : own;
}

/** Kinds that need the record or the locked row: the service decides them; the router lets them through. */
const serviceDecided = [
  'listing',
  'self',
  'authorityOver',
  'holdsPermissions',
  'resourceRole',
  'recordMember',
  'holder',
  'recordIs',
  'linked',
  'anyOf',
] as const;
type ServiceDecided = Extract<Rule, { kind: (typeof serviceDecided)[number] }>;
const isServiceDecided = (rule: Rule): rule is ServiceDecided => (serviceDecided as readonly string[]).includes(rule.kind);

function enforcerOf(authorization: Rule): Enforcer {
  if (isServiceDecided(authorization)) return 'service';
  switch (authorization.kind) {
    case 'public':
    case 'signedIn':
    case 'operator':
    case 'within':
    case 'console':
      return 'router';
    case 'member':
      return authorization.in === 'query' ? 'service' : 'router';
    case 'resource':
      if (authorization.in === 'body') return 'service';
      return authorization.capability === 'read' ? 'router' : 'router+service';
    case 'named':
      return enforcedBy(authorization.rule);
    case 'allOf': {
      const parts = new Set(authorization.of.map(enforcedBy));
      return parts.size === 1 ? [...parts][0]! : 'router+service';
    }
  }
}

type Input = { params: unknown; query: unknown; body: unknown; actor: Actor; db: import('knex').Knex };

const field = (source: unknown, name: string) => (source as Record<string, string | undefined> | undefined)?.[name];

/** Enforces the declaration before the handler; the actor remembers what it learned, so services asking again cost nothing. */
export async function enforce(authorization: Authorization, input: Input): Promise<void> {
  const { actor } = input;
  // Decided by the service on the record (see enforcedBy).
  if (isServiceDecided(authorization)) return;
  switch (authorization.kind) {
    case 'public':
    case 'signedIn':
      return;
    case 'named':
      return enforce(authorization.rule, input);
    case 'allOf':
      for (const part of authorization.of) await enforce(part, input);
      return;
    case 'member': {
      if (authorization.in === 'query') return;
      const organizationId = field(input.params, 'organization_id')!;
      const self = authorization.self !== undefined && field(input.params, authorization.self) === actor.userId;
      await actor.member(organizationId, self ? undefined : authorization.need);
      return;
    }
    case 'operator':
      if (!actor.operator) throw forbidden(`only operators of the service may do this (${authorization.note})`);
      return;
    case 'console': {
      if (actor.operator) return;
      const source = authorization.from === 'query' ? input.query : authorization.from === 'body' ? input.body : field(input.body, 'filter');
      const organizationId = field(source, 'organization_id');
      if (!organizationId)
        throw forbidden('only operators of the service may look across organizations: name your organization_id (its owners and admins hold jobs.manage)');
      await actor.within(organizationId, 'jobs.manage');
      return;
    }
    case 'within':
      await actor.within(field(authorization.from === 'body' ? input.body : input.query, 'organization_id')!, authorization.need);
      return;
    case 'resource':
      if (authorization.in === 'body') return;
      // Whoever cannot read the resource is answered here (404), whatever the operation: a service
      // that forgot its own check still could not be reached from outside. The capability itself is
      // decided here for reads, and for changes by their service, on the row it locks in its transaction.
      {
        const type = typeof authorization.type === 'string' ? authorization.type : (field(input.params, authorization.type.param) as ResourceType);
        const renamed = authorization.as;
        await actor.resource(input.db, type, field(input.params, authorization.param)!, 'read').catch((error: unknown) => {
          throw renamed && isAppError(error, 'not_found') ? notFound(renamed) : error;
        });
      }
      return;
  }
}
