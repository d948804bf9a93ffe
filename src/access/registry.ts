import type { Knex } from 'knex';
import type { ZodObject, ZodString, ZodType } from 'zod';
import type { Policy } from './policies/index.ts';
import type { Viewer } from './types.ts';

/**
 * The names of the resource types. Each type adds its own name from its declaration
 * (src/<domain>/resource.ts), so no list of names is written anywhere else:
 *
 *   declare module '../access/registry.ts' { interface ResourceTypeNames { canvas: true } }
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging, one name per src/<domain>/resource.ts
export interface ResourceTypeNames {}
export type ResourceType = keyof ResourceTypeNames & string;

/** Inherited-entry kinds of the access record (spec 2.7 `inherited.kind`). */
export type InheritedKind = 'chat' | 'canvas' | 'project';

/**
 * Everything the service needs to know about one resource type, declared once in the type's own
 * folder (`src/<domain>/resource.ts`) and listed once in src/app/resource-types.ts. Access (predicates,
 * grants, general access, the access record), the lifecycle (update, soft delete, restore, lists),
 * the activity feed, project membership, the library and the inventory report all read it here.
 * The table must have: id (uuid), organization_id, created_by_id, visibility, workspace_role,
 * created_at, updated_at, deleted_at, deleted_by_id.
 */
export interface ResourceTypeDeclaration<Row = unknown> {
  /** The name in `/access/{resource_type}`, grants, `project_items.item_type` and activity subjects. */
  type: ResourceType;
  table: string;
  /** How it reads in messages (`scheduled task`). */
  noun: string;
  /** How activity entries name it: `<activity>.created`, `.updated`, `.deleted`, `.restored`. */
  activity: string;
  /** Column holding its display title (`title`, or `name` for skills). */
  titleColumn: string;
  emojiColumn?: string;
  /** Inherited-entry kind when this type passes access on to others (spec 2.7 `inherited.kind`). */
  kind?: InheritedKind;
  /** Columns naming the row that created this one: that parent's audience reaches it (assets, scheduled tasks). */
  origins?: readonly { column: string; from: ResourceType }[];
  /** Types whose rows may reference this one through `resource_references` (asset_id = this id): their audience may view it. */
  referencedBy?: readonly ResourceType[];
  /** Who may do what (default: ./policies/index.ts `defaultPolicy`). */
  policy?: Policy;
  /** Its operations: collection path, `{<type>_id}` parameter, OpenAPI tag, and the resource as answered. */
  api: {
    path: string;
    idParams: ZodObject<Record<string, ZodString>>;
    tag: string;
    schema: ZodType;
    present(row: Row): unknown;
  };
  /**
   * Filed in projects through `project_items`: project access reaches it, and the project item
   * operations (`/projects/{project_id}/<path>`, `<path>/{id}/projects`) list it as given here.
   */
  project?: {
    schema: ZodType;
    /** The columns `present` needs, qualified with `alias`. */
    columns(alias: string): string[];
    present(row: Record<string, unknown>): unknown;
    /** How the listed item differs from the type's own answer, said in the list's description. */
    note?: string;
    /** Extra columns it shows in lists (conversations: the list extras of spec 2.3). */
    selectListExtras?: (db: Knex, query: Knex.QueryBuilder, alias: string, viewer: Viewer) => void;
  };
  /** Shown by GET /library, as `type` (default: the type's name); SQL over alias `t`: `subtype` a finer kind, `where` an extra condition. */
  library?: { type?: string; subtype?: string; where?: string };
  /** Counted by the inventory report (SQL over alias `r`): its state (default active/deleted) and where its project is read. */
  inventory?: { state?: string; project: 'project_id' | 'filed' | null };
}

/** Declares a resource type (in src/<domain>/resource.ts); src/app/resource-types.ts lists it. */
export const defineResourceType = <Row>(declaration: ResourceTypeDeclaration<Row>): ResourceTypeDeclaration<Row> => declaration;

/**
 * The registered list, kept on globalThis: a process may hold two instances of this module (under
 * tsx a module reached through `require` and one reached through a lazy `import()` — a job's
 * handler — are loaded apart, as in the tests), and both must see the one list.
 */
const slot = globalThis as {
  __workspaceResourceTypes?: { list: readonly ResourceTypeDeclaration[]; byName: ReadonlyMap<string, ResourceTypeDeclaration> };
};

/**
 * Binds the list of resource types (src/app/resource-types.ts) into the access module. Called by the
 * composition roots (src/app/deps.ts, src/app/routes.ts) before anything is served; calling it again with
 * the same types changes nothing. Access does not import the list: every type's folder imports access.
 */
export function registerResourceTypes(list: readonly ResourceTypeDeclaration[]): void {
  const names = (types: readonly ResourceTypeDeclaration[]) => types.map((t) => t.type).join(',');
  const current = slot.__workspaceResourceTypes;
  if (current) {
    if (names(current.list) !== names(list)) throw new Error('resource types are registered already, from another list');
    return;
  }
  const byName = new Map(list.map((declaration) => [declaration.type as string, declaration]));
  if (byName.size !== list.length) throw new Error('a resource type is declared twice in src/app/resource-types.ts');
  for (const declaration of list) {
    for (const name of [...(declaration.origins ?? []).map((o) => o.from), ...(declaration.referencedBy ?? [])])
      if (!byName.has(name)) throw new Error(`resource type ${declaration.type} names ${name}, which is not registered`);
  }
  slot.__workspaceResourceTypes = { list, byName };
}

function registered() {
  const current = slot.__workspaceResourceTypes;
  if (!current) throw new Error('resource types are not registered: the composition root calls registerResourceTypes(resourceTypes) first');
  return current;
}

/** Every registered resource type, in the order of src/app/resource-types.ts. */
export const registeredTypes = (): readonly ResourceTypeDeclaration[] => registered().list;

/** The declaration of a type, or undefined when no such type is registered. */
export const entryOf = (type: string): ResourceTypeDeclaration | undefined => registered().byName.get(type);

/** How a type reads in messages (404/403/409 bodies). */
export const nounOf = (type: ResourceType): string => entryOf(type)?.noun ?? type.replaceAll('_', ' ');

/** `project.columns` for a presenter's column list: each qualified with the alias. */
export const qualified =
  (columns: readonly string[]) =>
  (alias: string): string[] =>
    columns.map((column) => `${alias}.${column}`);

/** The name of a type's id parameter (`canvas_id`): the one key of `api.idParams`. */
export const idParamOf = (declaration: ResourceTypeDeclaration): string => Object.keys(declaration.api.idParams.shape)[0]!;
