import type { ResourceType } from './types.ts';

/**
 * How the access module finds each resource type in the database: one declarative entry per
 * type. Columns every resource table must have: id (uuid), organization_id, created_by_id,
 * visibility, workspace_role, deleted_at, deleted_by_id.
 */
export interface ResourceEntry {
  type: ResourceType;
  table: string;
  /** How activity entries name it: `<activity>.created`, `.updated`, `.deleted`, `.restored`. */
  activity: string;
  /** Column holding the display title in inherited entries (`title`, or `name` for skills). */
  titleColumn: string;
  emojiColumn?: string;
  /** Inherited-entry kind when this type passes access on to assets (spec 2.7 `inherited.kind`). */
  kind?: 'chat' | 'canvas' | 'project';
  /** Filed in projects through `project_items` (item_type = type): project access reaches it. */
  inProjects?: boolean;
  /** Columns naming the chat/canvas that created this row: that parent's audience reaches it (assets). */
  origins?: { column: string; from: ResourceType }[];
  /** Reachable through `resource_references` rows (asset_id = this id) from chats and canvases. */
  referenced?: boolean;
}

export const resourceEntries: Partial<Record<ResourceType, ResourceEntry>> = {
  project: { type: 'project', table: 'projects', activity: 'project', titleColumn: 'title', emojiColumn: 'emoji', kind: 'project' },
  canvas: { type: 'canvas', table: 'canvases', activity: 'canvas', titleColumn: 'title', kind: 'canvas', inProjects: true },
  chat_conversation: { type: 'chat_conversation', table: 'conversations', activity: 'conversation', titleColumn: 'title', kind: 'chat', inProjects: true },
  skill: { type: 'skill', table: 'skills', activity: 'skill', titleColumn: 'name', inProjects: true },
  asset: {
    type: 'asset',
    table: 'assets',
    activity: 'asset',
    titleColumn: 'title',
    inProjects: true,
    referenced: true,
    origins: [
      { column: 'origin_conversation_id', from: 'chat_conversation' },
      { column: 'origin_canvas_id', from: 'canvas' },
    ],
  },
  // The project a task names passes its audience on (as a chat passes its own to the assets made in it).
  scheduled_task: {
    type: 'scheduled_task',
    table: 'scheduled_tasks',
    activity: 'scheduled_task',
    titleColumn: 'title',
    origins: [{ column: 'project_id', from: 'project' }],
  },
};

export function entryOf(type: ResourceType): ResourceEntry | undefined {
  return resourceEntries[type];
}
