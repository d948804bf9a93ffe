import type { ResourceType } from '../access/index.ts';

/**
 * What GET /library shows, one entry per kind of resource: adding a kind is one line here (its
 * table must have id, organization_id, created_by_id, visibility, created_at, updated_at,
 * deleted_at, and be registered in the access module).
 */
export type LibraryTypeName = 'asset' | 'conversation' | 'canvas' | 'project' | 'skill';

export interface LibraryType {
  /** The `type` an item carries in the library. */
  type: LibraryTypeName;
  resourceType: ResourceType;
  table: string;
  /** SQL over alias `t`: the display title. */
  title: string;
  /** SQL over alias `t`: a finer kind (asset type), or NULL. */
  subtype: string;
  /** Extra SQL condition over alias `t`, e.g. hiding scheduled chats. */
  where?: string;
}

export const libraryTypes: readonly LibraryType[] = [
  { type: 'asset', resourceType: 'asset', table: 'assets', title: 't.title', subtype: 't.type' },
  // Scheduled runs would flood the library; they are listed under their scheduled task.
  { type: 'conversation', resourceType: 'chat_conversation', table: 'conversations', title: 't.title', subtype: 'NULL::text', where: 't.schedule_id IS NULL' },
  { type: 'canvas', resourceType: 'canvas', table: 'canvases', title: 't.title', subtype: 'NULL::text' },
  { type: 'project', resourceType: 'project', table: 'projects', title: 't.title', subtype: 'NULL::text' },
  { type: 'skill', resourceType: 'skill', table: 'skills', title: 't.name', subtype: 'NULL::text' },
];

export const libraryTypeNames = libraryTypes.map((t) => t.type) as [LibraryTypeName, ...LibraryTypeName[]];
