import type { Knex } from 'knex';
import { allows, capabilitiesOf, inheritedCeiling } from './policies/index.ts';
import { entryOf, type InheritedKind, type ResourceTypeDeclaration as ResourceEntry } from './registry.ts';
import { sourceRankSql } from './sql.ts';
import { roleOfRank, roleRank, type ResourceType, type Role, type Viewer } from './types.ts';

/** Spec 2.7 access record. */
export interface AccessRecord {
  resource_type: ResourceType;
  resource_id: string;
  owner_id: string | null;
  role: Role;
  shared: boolean;
  capabilities: { can_edit: boolean; can_manage_people: boolean; can_change_general_access: boolean; can_delete: boolean };
  can_leave: boolean;
  general_access: { visibility: 'private' | 'workspace' | 'public'; workspace_role: 'viewer' | 'editor' };
  general_access_editable: boolean;
  grants: { id: string; user_id: string; role: 'viewer' | 'editor'; granted_by_id: string | null; created_at: string }[];
  inherited: InheritedEntry[];
}

export interface InheritedEntry {
  kind: InheritedKind;
  id: string;
  title: string | null;
  emoji: string | null;
  via: 'origin' | 'reference';
  role: Role;
  through?: 'chat' | 'canvas';
  audience: boolean;
}

type Row = Record<string, any>;

/** General access role as shown: `owner` is not a writable workspace role, so it reads as editor. */
const generalRole = (workspaceRole: string): 'viewer' | 'editor' => (workspaceRole === 'viewer' ? 'viewer' : 'editor');

export async function accessRecord(db: Knex, type: ResourceType, row: Row, role: Role, viewer: Viewer): Promise<AccessRecord> {
  const grants = await db('resource_grants')
    .where({ resource_type: type, resource_id: row.id })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select('id', 'user_id', 'role', 'granted_by_id', 'created_at');
  const ownGrant = grants.some((g) => g.user_id === viewer.userId);
  return {
    resource_type: type,
    resource_id: row.id,
    owner_id: row.created_by_id ?? null,
    role,
    shared: row.visibility !== 'private' || grants.length > 0,
    capabilities: capabilitiesOf(type, role),
    // Someone holding a grant (and not owning the resource) may remove themselves.
    can_leave: ownGrant && row.created_by_id !== viewer.userId,
    general_access: { visibility: row.visibility, workspace_role: generalRole(row.workspace_role) },
    general_access_editable: allows(type, role, 'change_general_access'),
    grants: grants.map((g) => ({
      id: g.id,
      user_id: g.user_id,
      role: g.role,
      granted_by_id: g.granted_by_id,
      created_at: (g.created_at as Date).toISOString(),
    })),
    inherited: await inheritedEntries(db, entryOf(type)!, row, viewer),
  };
}

interface Source {
  kind: InheritedKind;
  id: string;
  title: string | null;
  emoji: string | null;
  rank: number;
  workspace_role: string;
  visibility: string;
}

/** Every parent that passes access on to this row, and what it passes to the caller. */
async function inheritedEntries(db: Knex, entry: ResourceEntry, row: Row, viewer: Viewer): Promise<InheritedEntry[]> {
  const entries: InheritedEntry[] = [];
  if (entry.project) {
    for (const p of await projectsOf(db, entry.type, row.id, viewer)) entries.push(present(p, p.via, 'project'));
  }
  const parents: { parent: ResourceEntry; id: string; via: 'origin' | 'reference' }[] = [];
  for (const { column, from } of entry.origins ?? []) {
    const parent = entryOf(from);
    if (parent && row[column]) parents.push({ parent, id: row[column], via: 'origin' });
  }
  if (entry.referencedBy?.length) {
    const refs = await db('resource_references').where({ asset_id: row.id }).orderBy('created_at').select('from_type', 'from_id');
    for (const ref of refs) {
      const parent = entryOf(ref.from_type);
      if (parent) parents.push({ parent, id: ref.from_id, via: 'reference' });
    }
  }
  for (const { parent, id, via } of parents) {
    const source = await sourceRow(db, parent, id, viewer);
    if (!source) continue;
    entries.push(present(source, via, via));
    if (parent.project) {
      // A project reaches the asset through the chat/canvas it holds: capped by both links.
      for (const p of await projectsOf(db, parent.type, id, viewer))
        entries.push({ ...present(p, via, via, 'project'), through: source.kind as 'chat' | 'canvas' });
    }
  }
  return entries;
}

function present(source: Source, via: 'origin' | 'reference', link: 'origin' | 'reference' | 'project', extra?: 'project'): InheritedEntry {
  let cap = roleRank[inheritedCeiling[link]];
  if (extra) cap = Math.min(cap, roleRank[inheritedCeiling[extra]]);
  const audience = source.rank > 0;
  // The caller's inherited role when in the audience, otherwise what the source's workspace audience gets.
  const base = audience ? source.rank : roleRank[generalRole(source.workspace_role)];
  return { kind: source.kind, id: source.id, title: source.title, emoji: source.emoji, via, role: roleOfRank(Math.min(base, cap))!, audience };
}

async function projectsOf(db: Knex, type: ResourceType, itemId: string, viewer: Viewer): Promise<(Source & { via: 'origin' | 'reference' })[]> {
  const rank = sourceRankSql('project', 'p', viewer, false);
  const rows = await db('project_items as pi')
    .join('projects as p', 'p.id', 'pi.project_id')
    .where({ 'pi.item_type': type, 'pi.item_id': itemId })
    .whereNull('p.deleted_at')
    .orderBy([{ column: 'pi.created_at' }, { column: 'p.id' }])
    .select('p.id', 'p.title', 'p.emoji', 'p.visibility', 'p.workspace_role', 'pi.via', db.raw(`${rank.sql} AS rank`, rank.bindings as Knex.RawBinding[]));
  return rows.map((r) => ({
    kind: 'project' as const,
    id: r.id,
    title: r.title,
    emoji: r.emoji,
    rank: Number(r.rank),
    visibility: r.visibility,
    workspace_role: r.workspace_role,
    via: r.via,
  }));
}

async function sourceRow(db: Knex, parent: ResourceEntry, id: string, viewer: Viewer): Promise<Source | null> {
  const rank = sourceRankSql(parent.type, 's', viewer, true);
  const row = await db(`${parent.table} as s`)
    .where('s.id', id)
    .whereNull('s.deleted_at')
    .first(
      's.id',
      db.raw(`s.${parent.titleColumn} AS title`),
      parent.emojiColumn ? db.raw(`s.${parent.emojiColumn} AS emoji`) : db.raw('NULL::text AS emoji'),
      's.visibility',
      's.workspace_role',
      db.raw(`${rank.sql} AS rank`, rank.bindings as Knex.RawBinding[]),
    );
  if (!row) return null;
  return {
    kind: parent.kind ?? 'chat',
    id: row.id,
    title: row.title,
    emoji: row.emoji,
    rank: Number(row.rank),
    visibility: row.visibility,
    workspace_role: row.workspace_role,
  };
}
