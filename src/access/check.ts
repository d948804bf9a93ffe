import type { Knex } from 'knex';
import { forbidden, notFound } from '../core/errors.ts';
import type { Caller } from '../core/caller.ts';
import { permissionsOf } from '../organizations/membership.ts';
import { allows, policies } from './policies/index.ts';
import { entryOf, type ResourceEntry } from './resources.ts';
import { roleRankSql } from './sql.ts';
import { roleOfRank, type Capability, type ResourceType, type Role, type Viewer } from './types.ts';

/** Human names for 404/403 messages. */
export const resourceNoun: Record<ResourceType, string> = {
  asset: 'asset',
  chat_conversation: 'conversation',
  canvas: 'canvas',
  project: 'project',
  scheduled_task: 'scheduled task',
  skill: 'skill',
};

/**
 * The caller as a viewer of an organization's resources, or null when they are not a member of
 * that live organization (non-members reach nothing: grants only ever go to members).
 */
export async function viewerIn(db: Knex, organizationId: string, userId: string): Promise<Viewer | null> {
  const member = await db('organization_members as m')
    .join('organizations as o', 'o.id', 'm.organization_id')
    .where({ 'm.organization_id': organizationId, 'm.user_id': userId })
    .whereNull('o.deleted_at')
    .first('m.role');
  if (!member) return null;
  const permissions = await permissionsOf(db, organizationId, member.role as string);
  return { userId, organizationId, administers: permissions.has('resources.administer') };
}

export interface Access<Row> {
  row: Row;
  role: Role;
  viewer: Viewer;
  entry: ResourceEntry;
}

/**
 * Loads one resource the caller may act on. 404 when it does not exist or the caller cannot read
 * it (same body); 403 when readable but the role lacks `capability`. With `forUpdate` (inside a
 * transaction) the row is locked first, so the decision and the change see the same state.
 */
export async function requireAccess<Row = Record<string, any>>(
  db: Knex,
  caller: Caller | { userId: string },
  type: ResourceType,
  id: string,
  capability: Capability = 'read',
  options: { forUpdate?: boolean } = {},
): Promise<Access<Row>> {
  const entry = entryOf(type);
  const noun = resourceNoun[type];
  if (!entry) throw notFound(noun);
  const located = db(entry.table).where({ id }).first('organization_id');
  const head = options.forUpdate ? await located.forUpdate() : await located;
  if (!head) throw notFound(noun);
  const viewer = await viewerIn(db, head.organization_id as string, caller.userId);
  if (!viewer) throw notFound(noun);
  const rank = roleRankSql(type, 't', viewer);
  const row = await db(`${entry.table} as t`).where('t.id', id).first('t.*', db.raw(`${rank.sql} AS "__rank"`, rank.bindings as Knex.RawBinding[]));
  const role = roleOfRank(Number(row?.__rank ?? 0));
  if (!row || !role) throw notFound(noun);
  delete row.__rank;
  if (!allows(type, role, capability)) throw forbidden(`your role on this ${noun} is "${role}"; ${describe(capability)} needs ${needed(type, capability)}`);
  return { row: row as Row, role, viewer, entry };
}

function describe(capability: Capability): string {
  return capability.replaceAll('_', ' ');
}

function needed(type: ResourceType, capability: Capability): string {
  const allowed = policies[type][capability];
  return `the role ${allowed.map((r) => `"${r}"`).join(' or ')}${allowed.includes('owner') ? ' (organization owners and admins act as owners)' : ''}`;
}
