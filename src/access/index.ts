/**
 * Access control for every resource type — the public API (import from here only).
 *
 * The Actor (./actor.ts) is the one authorization path: one per request (HandlerInput.actor) or
 * job (actorFor), with the caller's membership of each organization read once.
 *   actor.member(org, need?)    organization by id in the path: 404 outside, 403 lacking a permission
 *   actor.within(org, need?)    collection-level (organization in body/query): 403 outside, also for a
 *                               nonexistent organization (spec §4.1: no 404), 403 lacking a permission
 *   actor.viewer(org)           lists: Viewer | null (null → empty page)
 *   actor.resource(db, type, id, capability = 'read', { forUpdate? })
 *       → { row, role, viewer, entry } in one SQL round trip. 404 (same body as nonexistent) when the
 *       row does not exist or the caller cannot read it; 403 when readable but the role lacks
 *       `capability` ('read' | 'edit' | 'manage_people' | 'change_general_access' | 'delete' | 'restore' | 'archive').
 *       Pass a transaction and forUpdate: true to lock the row before deciding. Soft-deleted rows
 *       are returned too (the lifecycle in ./lifecycle.ts checks them).
 *   whereReadable(query, type, alias, viewer)  adds the readable-by predicate IN SQL to a query over
 *       the type's table aliased `alias` (also scopes to viewer.organizationId), so lists and keyset
 *       pages never contain an unreadable row.
 *   selectRoleRank / roleOfRank / allows / capabilitiesOf / sharedSql: roles in lists.
 *   getAccessRecord(deps, actor, type, id) → spec 2.7 record.
 *   fileIntoProjectOnCreate(trx, actor, { type, id, organizationId }, projectId), addReference(...).
 *   The lifecycle (./lifecycle.ts): changeLive, softDelete, restore, listReadable — one transaction
 *   each, the row locked and authorized first, driven by the registry below.
 *
 * REGISTERING A RESOURCE TYPE: declare it once with `defineResourceType` in its own folder
 * (src/<domain>/resource.ts: table, noun, activity wording, inheritance, policy, api, project,
 * library, inventory) and add it to the list in src/app/resource-types.ts (CONTRIBUTING.md). Access reads
 * the list the composition root registers (./registry.ts); it never imports a domain. Default
 * policy (./policies/index.ts): editors edit; owners manage people, general access, delete, restore, archive.
 *
 * Role = max(owner: creator or organization owner/admin (`resources.administer`); direct grant;
 * general access: visibility workspace|public → workspace_role for organization members (public acts
 * like workspace: visible to members only); inherited: project the item is filed in (≤ editor),
 * chat/canvas that created an asset (≤ editor), chat/canvas that references it (viewer)).
 * Non-members of the organization never reach anything.
 */
export { Actor, actorFor, type Access, type PermissionNeed } from './actor.ts';
export { whereReadable, selectRoleRank, sharedSql, readableSql, readableReferenceSql } from './sql.ts';
export { allows, capabilitiesOf, defaultPolicy, policyOf, type Policy } from './policies/index.ts';
export {
  resourceColumnNames,
  roleOfRank,
  type ResourceColumns,
  type ResourceRow,
  type ResourceType,
  type Role,
  type Capability,
  type Viewer,
} from './types.ts';
export { getAccessRecord, revokeGrantsOfRemovedMember } from './service.ts';
export { changeLive, listReadable, recordLifecycle, requireLive, restore, softDelete } from './lifecycle.ts';
export { accessRecordSchema, grantSchema } from './schema.ts';
export { addReference, fileIntoProjectOnCreate, requireProjectToFileInto, type ProjectItemType } from './links.ts';
export { accessRecord } from './record.ts';
export {
  defineResourceType,
  entryOf,
  idParamOf,
  nounOf,
  qualified,
  registeredTypes,
  registerResourceTypes,
  type ResourceTypeDeclaration,
  type ResourceTypeNames,
} from './registry.ts';
export {
  lifecycleFields,
  resourceFields,
  visibilitySchema,
  workspaceRoleSchema,
  writableVisibilitySchema,
  writableWorkspaceRoleSchema,
} from './schema.ts';
export { presentLifecycle, presentResourceFields } from './present.ts';
