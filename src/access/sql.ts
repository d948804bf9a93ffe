import type { Knex } from 'knex';
import { inheritedCeiling } from './policies/index.ts';
import { entryOf, registeredTypes, type ResourceTypeDeclaration as ResourceEntry } from './registry.ts';
import { roleRank, type ResourceType, type Viewer } from './types.ts';

/**
 * The caller's role on a row, computed inside SQL so lists filter (and page) on it. A role is a
 * rank: 0 none, 1 viewer, 2 editor, 3 owner. Sources, highest wins:
 *   owner (created_by_id) · direct grant · general access (visibility ≠ private → workspace_role,
 *   capped at editor; `public` acts as `workspace` for members) · project the row is filed in
 *   (that project's own rank, capped at editor) · chat/canvas that created the asset (capped at
 *   editor) · chat/canvas that references the asset (viewer). Deleted parents pass nothing on.
 * Table and column names come from the registry (trusted constants); user values are bindings.
 */
export interface Fragment {
  sql: string;
  bindings: unknown[];
}

const generalRank = (a: string) => `CASE WHEN ${a}.visibility <> 'private' THEN CASE WHEN ${a}.workspace_role = 'viewer' THEN 1 ELSE 2 END ELSE 0 END`;
const ceiling = (source: keyof typeof inheritedCeiling) => roleRank[inheritedCeiling[source]];

function grantRank(type: ResourceType, a: string, v: Viewer): Fragment {
  return {
    sql: `COALESCE((SELECT CASE g.role WHEN 'editor' THEN 2 ELSE 1 END FROM resource_grants g WHERE g.resource_type = '${type}' AND g.resource_id = ${a}.id AND g.user_id = ?), 0)`,
    bindings: [v.userId],
  };
}

/** Owner, grant and general access of the row itself. */
function directRank(entry: ResourceEntry, a: string, v: Viewer): Fragment {
  const grant = grantRank(entry.type, a, v);
  return { sql: `GREATEST(CASE WHEN ${a}.created_by_id = ? THEN 3 ELSE 0 END, ${generalRank(a)}, ${grant.sql})`, bindings: [v.userId, ...grant.bindings] };
}

function projectRank(entry: ResourceEntry, a: string, v: Viewer): Fragment | null {
  const projects = entryOf('project');
  if (!entry.project || !projects) return null;
  const p = `${a}_p`;
  const inner = directRank(projects, p, v);
  return {
    sql: `COALESCE((SELECT MAX(LEAST(${inner.sql}, ${ceiling('project')})) FROM project_items ${a}_pi JOIN projects ${p} ON ${p}.id = ${a}_pi.project_id WHERE ${a}_pi.item_type = '${entry.type}' AND ${a}_pi.item_id = ${a}.id AND ${p}.deleted_at IS NULL), 0)`,
    bindings: inner.bindings,
  };
}

/** Direct and project access: what a chat or canvas passes on to its assets. */
function ownRank(entry: ResourceEntry, a: string, v: Viewer): Fragment {
  return greatest([directRank(entry, a, v), projectRank(entry, a, v)]);
}

function greatest(parts: (Fragment | null)[]): Fragment {
  const present = parts.filter((p): p is Fragment => p !== null);
  if (present.length === 1) return present[0]!;
  return { sql: `GREATEST(${present.map((p) => p.sql).join(', ')})`, bindings: present.flatMap((p) => p.bindings) };
}

function originRanks(entry: ResourceEntry, a: string, v: Viewer): Fragment[] {
  return (entry.origins ?? []).flatMap(({ column, from }, i) => {
    const parent = entryOf(from);
    if (!parent) return [];
    const o = `${a}_o${i}`;
    const rank = ownRank(parent, o, v);
    return [
      {
        sql: `COALESCE((SELECT LEAST(${rank.sql}, ${ceiling('origin')}) FROM ${parent.table} ${o} WHERE ${o}.id = ${a}.${column} AND ${o}.deleted_at IS NULL), 0)`,
        bindings: rank.bindings,
      },
    ];
  });
}

function referenceRanks(entry: ResourceEntry, a: string, v: Viewer): Fragment[] {
  return (entry.referencedBy ?? []).flatMap((from, i) => {
    const parent = entryOf(from);
    if (!parent) return [];
    const x = `${a}_r${i}`;
    const rank = ownRank(parent, x, v);
    return [
      {
        sql: `COALESCE((SELECT MAX(LEAST(${rank.sql}, ${ceiling('reference')})) FROM resource_references ${x}_rr JOIN ${parent.table} ${x} ON ${x}.id = ${x}_rr.from_id WHERE ${x}_rr.from_type = '${from}' AND ${x}_rr.asset_id = ${a}.id AND ${x}.deleted_at IS NULL), 0)`,
        bindings: rank.bindings,
      },
    ];
  });
}

/** SQL expression: the viewer's role rank (0–3) on the row aliased `alias`. */
export function roleRankSql(type: ResourceType, alias: string, viewer: Viewer): Fragment {
  const entry = requireEntry(type);
  if (viewer.administers) return { sql: `(CASE WHEN ${alias}.organization_id = ? THEN 3 ELSE 0 END)`, bindings: [viewer.organizationId] };
  const rank = greatest([
    directRank(entry, alias, viewer),
    projectRank(entry, alias, viewer),
    ...originRanks(entry, alias, viewer),
    ...referenceRanks(entry, alias, viewer),
  ]);
  return { sql: `(CASE WHEN ${alias}.organization_id = ? THEN ${rank.sql} ELSE 0 END)`, bindings: [viewer.organizationId, ...rank.bindings] };
}

/**
 * SQL expression: the rank (0–3) of `userId` on the row aliased `alias` from ownership, grants,
 * general access and inheritance, for a query that has already joined the caller's membership of
 * the row's organization (src/access/actor.ts adds the `resources.administer` shortcut).
 */
export function memberRankSql(type: ResourceType, alias: string, userId: string): Fragment {
  const entry = requireEntry(type);
  const viewer: Viewer = { userId, organizationId: '', administers: false };
  return greatest([
    directRank(entry, alias, viewer),
    projectRank(entry, alias, viewer),
    ...originRanks(entry, alias, viewer),
    ...referenceRanks(entry, alias, viewer),
  ]);
}

/**
 * Readable-by predicate: `organization_id = viewer's organization AND rank > 0`, written as
 * ORed EXISTS so Postgres stops at the first source that grants access.
 */
export function readableSql(type: ResourceType, alias: string, viewer: Viewer): Fragment {
  const entry = requireEntry(type);
  if (viewer.administers) return { sql: `${alias}.organization_id = ?`, bindings: [viewer.organizationId] };
  const sources = [
    directRank(entry, alias, viewer),
    projectRank(entry, alias, viewer),
    ...originRanks(entry, alias, viewer),
    ...referenceRanks(entry, alias, viewer),
  ].filter((f): f is Fragment => f !== null);
  return {
    sql: `(${alias}.organization_id = ? AND (${sources.map((s) => `${s.sql} > 0`).join(' OR ')}))`,
    bindings: [viewer.organizationId, ...sources.flatMap((s) => s.bindings)],
  };
}

/** Adds the readable-by predicate to a query over the type's table (aliased `alias`). */
export function whereReadable<Q extends Knex.QueryBuilder>(query: Q, type: ResourceType, alias: string, viewer: Viewer): Q {
  const { sql, bindings } = readableSql(type, alias, viewer);
  return query.whereRaw(sql, bindings as Knex.RawBinding[]) as Q;
}

/** Selects the viewer's role rank as `as` (default `access_rank`), e.g. for `can_edit` in lists. */
export function selectRoleRank<Q extends Knex.QueryBuilder>(db: Knex, query: Q, type: ResourceType, alias: string, viewer: Viewer, as = 'access_rank'): Q {
  const { sql, bindings } = roleRankSql(type, alias, viewer);
  return query.select(db.raw(`${sql} AS "${as}"`, bindings as Knex.RawBinding[])) as Q;
}

/** SQL boolean: shared beyond its owner directly (general access not private, or any grant). */
export function sharedSql(type: ResourceType, alias: string): string {
  return `(${alias}.visibility <> 'private' OR EXISTS (SELECT 1 FROM resource_grants sg WHERE sg.resource_type = '${type}' AND sg.resource_id = ${alias}.id))`;
}

function requireEntry(type: ResourceType): ResourceEntry {
  const entry = entryOf(type);
  if (!entry) throw new Error(`resource type ${type} is not registered in src/app/resource-types.ts`);
  return entry;
}

/** Rank of the viewer on a parent row as a source of inherited access (own grants, general access, its projects). */
export function sourceRankSql(type: ResourceType, alias: string, viewer: Viewer, withProjects: boolean): Fragment {
  const entry = requireEntry(type);
  if (viewer.administers) return { sql: '3', bindings: [] };
  return withProjects ? ownRank(entry, alias, viewer) : directRank(entry, alias, viewer);
}

const uuidPattern = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/**
 * SQL boolean over a reference stored as (type, id) text — an activity entry's subject, an id in
 * its data: can the viewer read the row it names? The same predicate as `readableSql`, evaluated
 * on the one row a primary-key probe finds. A scalar subquery, not EXISTS: Postgres may turn an
 * EXISTS into a hashed set of every readable row of the organization (the whole table's access
 * computed for one page of a feed); a scalar subquery stays a probe per outer row. A type that is not a registered resource type
 * (`member`, `role`, `organization`…) is not a resource and yields `otherwise`. CASE, not OR, so
 * Postgres evaluates only the branch of the stored type, and an id that is not a uuid never
 * reaches the cast (it names no resource).
 */
export function readableReferenceSql(typeExpr: string, idExpr: string, viewer: Viewer, otherwise: boolean): Fragment {
  const branches = registeredTypes().map((entry, i) => {
    const r = `ref${i}`;
    const readable = readableSql(entry.type, r, viewer);
    return {
      sql: `WHEN '${entry.type}' THEN (${idExpr} ~ '${uuidPattern}' AND COALESCE((SELECT ${readable.sql} FROM ${entry.table} ${r} WHERE ${r}.id = (${idExpr})::uuid), false))`,
      bindings: readable.bindings,
    };
  });
  return {
    sql: `(CASE ${typeExpr} ${branches.map((b) => b.sql).join(' ')} ELSE ${otherwise} END)`,
    bindings: branches.flatMap((b) => b.bindings),
  };
}
