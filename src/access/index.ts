/**
 * Access control for every resource type — the public API (import from here only).
 *
 *   requireAccess(db, caller, type, id, capability = 'read', { forUpdate? })
 *       → { row, role, viewer, entry }. 404 (not_found, same body as nonexistent) when the row does
 *       not exist or the caller cannot read it; 403 when readable but the role lacks `capability`
 *       ('read' | 'edit' | 'manage_people' | 'change_general_access' | 'delete' | 'restore' | 'archive').
 *       Pass a transaction and forUpdate: true to lock the row before deciding. Soft-deleted rows
 *       are returned too (check row.deleted_at yourself: restore needs them).
 *   viewerIn(db, organizationId, userId) → Viewer | null (null: not a member → empty list / 404).
 *   whereReadable(query, type, alias, viewer)  adds the readable-by predicate IN SQL to a query over
 *       the type's table aliased `alias` (also scopes to viewer.organizationId), so lists and
 *       keyset pages never contain an unreadable row:
 *         const viewer = await viewerIn(db, orgId, caller.userId); if (!viewer) return { items: [], next_cursor: null };
 *         const q = whereReadable(db('conversations as c').select('c.*'), 'chat_conversation', 'c', viewer);
 *   selectRoleRank(db, query, type, alias, viewer, as = 'access_rank') selects the caller's rank
 *       (0 none, 1 viewer, 2 editor, 3 owner); roleOfRank(rank) → Role; allows(type, role, capability);
 *       capabilitiesOf(type, role) → { can_edit, can_manage_people, can_change_general_access, can_delete }.
 *   sharedSql(type, alias) → SQL boolean for list extra `shared` (general access not private, or any grant).
 *   getAccessRecord(deps, caller, type, id) → spec 2.7 record; accessRecordSchema is its zod schema
 *       (use both for GET /conversations/{id}/access, /documents/{id}/access).
 *   fileIntoProjectOnCreate(trx, caller, { type, id, organizationId }, projectId) — in your create
 *       transaction when the body has project_id (400 on project_id if unusable; needs project editor).
 *   addReference(trx, { type: 'chat_conversation' | 'canvas', id }, assetId) — a chat/canvas uses an asset.
 *   listItemProjects (src/projects/membership.ts) serves GET /<type>/{id}/projects.
 *
 * REGISTERING A RESOURCE TYPE: add one entry to `resourceEntries` in ./resources.ts, e.g.
 *   asset: { type: 'asset', table: 'assets', titleColumn: 'title', inProjects: true, referenced: true,
 *            origins: [{ column: 'origin_conversation_id', from: 'chat_conversation' }, { column: 'origin_canvas_id', from: 'canvas' }] }
 *   The table needs id uuid, organization_id, created_by_id, visibility, workspace_role, deleted_at, deleted_by_id.
 *   Authorization per type is declared in ./policies/index.ts (defaults: editors edit; owners manage people,
 *   general access, delete, restore, archive).
 *
 * Role = max(owner: creator or organization owner/admin (`resources.administer`); direct grant;
 * general access: visibility workspace|public → workspace_role for organization members (public acts
 * like workspace: visible to members only, never outside the organization); inherited: project the
 * item is filed in (≤ editor), chat/canvas that created an asset (≤ editor), chat/canvas that
 * references it (viewer)). Non-members of the organization never reach anything.
 */
export { requireAccess, viewerIn, resourceNoun, type Access } from './check.ts';
export { whereReadable, selectRoleRank, sharedSql, readableSql, roleRankSql } from './sql.ts';
export { allows, capabilitiesOf, policies } from './policies/index.ts';
export { roleOfRank, roleRank, maxRole, resourceTypes, type ResourceType, type Role, type GrantRole, type Capability, type Viewer } from './types.ts';
export { getAccessRecord, requireLive } from './service.ts';
export { accessRecordSchema, grantSchema, resourceTypeSchema } from './schema.ts';
export { fileIntoProjectOnCreate, addReference, projectIdsOf, type ProjectItemType } from './links.ts';
export { accessRecord, type AccessRecord } from './record.ts';
export { entryOf, resourceEntries, type ResourceEntry } from './resources.ts';
