import type { Knex } from 'knex';
import { registeredTypes, type ResourceTypeDeclaration } from '../access/index.ts';
import { countMembers } from '../members/index.ts';

/**
 * Where each kind of resource lives and how its state and project are read: invitations, and every
 * resource type whose declaration (src/<domain>/resource.ts) has an `inventory` section. A table
 * not (yet) migrated is skipped. SQL expressions refer to the resource row as `r`.
 */
export interface InventorySource {
  type: string;
  table: string;
  state: string;
  project: string;
}

const softDeleted = `CASE WHEN r.deleted_at IS NOT NULL THEN 'deleted' ELSE 'active' END`;
const originProject = (itemType: string) =>
  `(SELECT pi.project_id::text FROM project_items pi WHERE pi.item_type = '${itemType}' AND pi.item_id = r.id AND pi.via = 'origin' LIMIT 1)`;

const projectOf = (type: string, project: 'project_id' | 'filed' | null) =>
  project === 'project_id' ? 'r.project_id::text' : project === 'filed' ? originProject(type) : 'NULL';

const resourceSources = (types: readonly ResourceTypeDeclaration[]): InventorySource[] =>
  types.flatMap(({ type, table, inventory }) =>
    inventory ? [{ type, table, state: inventory.state ?? softDeleted, project: projectOf(type, inventory.project) }] : [],
  );

export const inventorySources = (): InventorySource[] => [
  { type: 'invitation', table: 'invitations', state: 'r.status', project: 'NULL' },
  ...resourceSources(registeredTypes()),
];

let existing: Promise<Set<string>> | undefined;

/** Tables present in this database, asked once per process (migrations run before processes start). */
function existingTables(db: Knex): Promise<Set<string>> {
  existing ??= db('information_schema.tables')
    .where('table_schema', db.raw('current_schema()'))
    .whereIn(
      'table_name',
      inventorySources().map((source) => source.table),
    )
    .pluck('table_name')
    .then((names: string[]) => new Set(names))
    .catch((error) => {
      existing = undefined;
      throw error;
    });
  return existing;
}

export interface InventoryRow {
  type: string;
  state: string;
  project_id: string | null;
  count: number;
}

/**
 * Counts of the organization's resources by type, state and project (one UNION ALL query over the
 * resource tables; members are counted by the members module, the one reader of memberships).
 */
export async function inventoryOf(db: Knex, organizationId: string): Promise<InventoryRow[]> {
  const tables = await existingTables(db);
  const sources = inventorySources().filter((source) => tables.has(source.table));
  const members = await countMembers(db, organizationId);
  const memberRows: InventoryRow[] = members ? [{ type: 'member', state: 'active', project_id: null, count: members }] : [];
  if (sources.length === 0) return memberRows;
  const parts = sources.map(
    (source) => `SELECT '${source.type}' AS type, ${source.state} AS state, ${source.project} AS project_id, count(*)::bigint AS count
       FROM ${source.table} r WHERE r.organization_id = :organizationId GROUP BY 2, 3`,
  );
  const { rows } = await db.raw(
    `SELECT type, state, project_id, count FROM (${parts.join(' UNION ALL ')}) inventory ORDER BY type, state, project_id NULLS FIRST`,
    { organizationId },
  );
  const resources = (rows as { type: string; state: string; project_id: string | null; count: string }[]).map((row) => ({
    type: row.type,
    state: row.state,
    project_id: row.project_id ?? null,
    count: Number(row.count),
  }));
  // Ordered by type as before: `member` sorts between `invitation` and `project`.
  return [...resources, ...memberRows].sort((a, b) => a.type.localeCompare(b.type));
}
