import type { ResourceType, ResourceTypeDeclaration } from '../access/index.ts';

/**
 * What GET /library shows: every resource type whose declaration (src/<domain>/resource.ts) has a
 * `library` section, in the order of the registry (src/app/resource-types.ts).
 */
export interface LibraryType {
  /** The `type` an item carries in the library. */
  type: string;
  resourceType: ResourceType;
  table: string;
  /** SQL over alias `t`: the display title. */
  title: string;
  /** SQL over alias `t`: a finer kind (asset type), or NULL. */
  subtype: string;
  /** Extra SQL condition over alias `t`, e.g. hiding scheduled chats. */
  where?: string;
}

export const libraryTypesOf = (types: readonly ResourceTypeDeclaration[]): LibraryType[] =>
  types.flatMap(({ type, table, titleColumn, library }) =>
    library
      ? [
          {
            type: library.type ?? type,
            resourceType: type,
            table,
            title: `t.${titleColumn}`,
            subtype: library.subtype ?? 'NULL::text',
            ...(library.where && { where: library.where }),
          },
        ]
      : [],
  );

export const libraryTypeNamesOf = (types: readonly ResourceTypeDeclaration[]) => libraryTypesOf(types).map((t) => t.type) as [string, ...string[]];
