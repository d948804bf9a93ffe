import type { Actor, PermissionNeed } from '../access/actor.ts';
import type { Capability, ResourceType } from '../access/types.ts';
import { forbidden, isAppError, notFound } from '../core/errors.ts';

/**
 * Who may call an operation, declared on the route itself (`authorize:`) so a reader sees it on
 * the route's own screen, the router enforces it before the handler runs, and /openapi.json
 * states it. One of:
 *
 *   signedIn(why)              any authenticated caller (creating an organization, a slug suggestion)
 *   rule(who)                  a domain rule that needs the record to decide (an invitation's invitee):
 *                              stated here, enforced by the service
 *   member(need?, {self?})     the organization named by `{organization_id}` in the path: 404 to a
 *                              non-member (it does not exist for them), 403 lacking `need`; with
 *                              `self: 'user_id'` a member may always act on their own `{user_id}`
 *   within(from, need?)        a collection-level operation naming `organization_id` in its body or
 *                              query: 403 outside the organization, also for one that does not exist (spec §4.1)
 *   listing(from)              a list: the handler pages only what the caller can read (an empty
 *                              page outside the organization); nothing to refuse up front
 *   resource(type, capability, param)
 *                              one resource by id: 404 when unreadable (like a missing id), 403 when
 *                              readable without `capability`. Readability is decided here for every
 *                              operation, in one round trip; a change's capability is decided by its
 *                              service inside its transaction, on the locked row (src/access/lifecycle.ts).
 *   operator(what)             operators of the service only (a token claim or a configured id,
 *                              src/auth/operator.ts): 403 to everyone else
 *   jobConsole(from)           the job console: operators see every organization; anyone else must
 *                              name `organization_id` (body or query) and hold `jobs.manage` there
 *                              (owners and admins): 403 otherwise
 */
export type Authorization =
  | { kind: 'signedIn'; why: string }
  | { kind: 'rule'; who: string }
  | { kind: 'member'; need?: PermissionNeed | undefined; self?: string | undefined }
  | { kind: 'within'; from: 'body' | 'query'; need?: PermissionNeed | undefined }
  | { kind: 'listing'; from: 'query' | 'body' }
  | { kind: 'resource'; type: ResourceType | { param: string }; capability: Capability; param: string; as?: string | undefined }
  | { kind: 'operator'; what: string }
  | { kind: 'console'; from: 'query' | 'body' | 'body.filter' };

export const signedIn = (why: string): Authorization => ({ kind: 'signedIn', why });
/** A rule of the domain that needs the resource itself to decide (an invitation's invitee): the service enforces it. */
export const rule = (who: string): Authorization => ({ kind: 'rule', who });
export const member = (need?: PermissionNeed, options: { self?: string } = {}): Authorization => ({ kind: 'member', need, self: options.self });
export const within = (from: 'body' | 'query', need?: PermissionNeed): Authorization => ({ kind: 'within', from, need });
/** Operators of the service only (moderating the skill catalog, the job console). */
export const operator = (what: string): Authorization => ({ kind: 'operator', what });
/** The job console: operators across organizations, owners and admins (`jobs.manage`) within the organization they name. */
export const jobConsole = (from: 'query' | 'body' | 'body.filter' = 'query'): Authorization => ({ kind: 'console', from });
export const listing = (from: 'query' | 'body' = 'query'): Authorization => ({ kind: 'listing', from });
/** `type` may name the path parameter holding it (`/access/{resource_type}/…`); `as` renames the resource in the 404. */
export const resource = (type: ResourceType | { param: string }, capability: Capability, param: string, options: { as?: string } = {}): Authorization => ({
  kind: 'resource',
  type,
  capability,
  param,
  as: options.as,
});

const needText = (need: PermissionNeed | undefined) =>
  need === undefined ? '' : ` holding ${typeof need === 'string' ? `\`${need}\`` : need.map((p) => `\`${p}\``).join(' or ')}`;

/** One line for the operation's OpenAPI description. */
export function describeAuthorization(authorization: Authorization): string {
  switch (authorization.kind) {
    case 'signedIn':
      return `Any signed-in caller: ${authorization.why}.`;
    case 'rule':
      return `${authorization.who[0]!.toUpperCase()}${authorization.who.slice(1)}.`;
    case 'member':
      return `Members of the organization${needText(authorization.need)}${authorization.self ? ` (a member may always act on their own \`${authorization.self}\`)` : ''}; 404 for non-members, 403 lacking the permission.`;
    case 'within':
      return `Members of the organization named in the ${authorization.from}${needText(authorization.need)}; 403 otherwise (also for an organization that does not exist).`;
    case 'listing':
      return 'Lists only what the caller can read; a caller outside the organization gets an empty page.';
    case 'operator':
      return `Operators of the service only (${authorization.what}): a token whose operator claim (\`OPERATOR_CLAIM\`) names the operator role, or a configured operator id; 403 for everyone else.`;
    case 'console':
      return `Operators of the service see every organization; anyone else must name \`organization_id\` in the ${authorization.from === 'body.filter' ? 'body’s filter' : authorization.from} and hold \`jobs.manage\` there (owners and admins); 403 otherwise.`;
    case 'resource':
      return `The caller's role on the ${authorization.as ?? (typeof authorization.type === 'string' ? authorization.type.replace('_', ' ') : 'resource')} must allow \`${authorization.capability}\`; 404 when the caller cannot read it (the same answer as for a missing id), 403 when they can read it but their role does not allow this.`;
  }
}

type Input = { params: unknown; query: unknown; body: unknown; actor: Actor; db: import('knex').Knex };

const field = (source: unknown, name: string) => (source as Record<string, string | undefined> | undefined)?.[name];

/** Enforces the declaration before the handler; the actor remembers what it learned, so services asking again cost nothing. */
export async function enforce(authorization: Authorization, input: Input): Promise<void> {
  const { actor } = input;
  switch (authorization.kind) {
    case 'signedIn':
    case 'rule':
    case 'listing':
      return;
    case 'member': {
      const organizationId = field(input.params, 'organization_id')!;
      const self = authorization.self !== undefined && field(input.params, authorization.self) === actor.userId;
      await actor.member(organizationId, self ? undefined : authorization.need);
      return;
    }
    case 'operator':
      if (!actor.operator) throw forbidden(`only operators of the service may do this (${authorization.what})`);
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
