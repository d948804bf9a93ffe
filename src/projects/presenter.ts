import { presentLifecycle, presentResourceFields, resourceColumnNames, type ResourceColumns } from '../access/index.ts';
import { iso } from '../core/present.ts';

/** A project as stored. */
export interface ProjectRow extends ResourceColumns {
  slug: string;
  title: string;
  emoji: string | null;
  description: string | null;
  knowledge_skill_id: string | null;
  chat_tools: string[] | null;
  mod_source_id: string | null;
  metadata: unknown;
  archived_at: Date | null;
  archived_by_id: string | null;
}

export const projectColumns = [
  ...resourceColumnNames,
  'slug',
  'title',
  'emoji',
  'description',
  'knowledge_skill_id',
  'chat_tools',
  'mod_source_id',
  'metadata',
  'archived_at',
  'archived_by_id',
] as const;

/** Spec 2.4, field for field, and the project's chat settings (`chat_tools`). */
export function presentProject(row: ProjectRow) {
  return {
    ...presentResourceFields(row),
    slug: row.slug,
    title: row.title,
    emoji: row.emoji,
    description: row.description,
    knowledge_skill_id: row.knowledge_skill_id,
    chat_tools: row.chat_tools,
    mod_source_id: row.mod_source_id,
    metadata: row.metadata ?? null,
    archived_at: iso(row.archived_at),
    archived_by_id: row.archived_by_id,
    ...presentLifecycle(row),
  };
}
