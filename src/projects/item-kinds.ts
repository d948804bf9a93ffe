import type { ZodType } from 'zod';
import type { Knex } from 'knex';
import type { ProjectItemType, Viewer } from '../access/index.ts';
import { assetColumns, presentAsset, type AssetRow } from '../assets/index.ts';
import { assetSchema } from '../assets/index.ts';
import { canvasColumns, presentCanvas, type CanvasRow } from '../canvases/index.ts';
import { canvasSchema } from '../canvases/index.ts';
import { selectListExtras, withListExtras } from '../conversations/index.ts';
import { conversationColumns, presentConversationListItem } from '../conversations/index.ts';
import { conversationListItemSchema } from '../conversations/index.ts';
import { presentSkill, skillColumns, type SkillRow } from '../skills/index.ts';
import { skillSchema } from '../skills/index.ts';

export interface ProjectItemKind {
  type: ProjectItemType;
  /** Path segment under /projects/{project_id}/. */
  segment: string;
  /** Body field of POST and path parameter of DELETE. */
  idField: string;
  /** The item as its own domain answers it (a skill bare, not in its `{skill}` envelope). */
  schema: ZodType;
  /** The columns its presenter needs, qualified with `alias`. */
  columns: (alias: string) => string[];
  present: (row: Record<string, unknown>) => unknown;
  /** Extra columns a kind shows in lists (conversations: the list extras of spec 2.3). */
  selectListExtras?: (db: Knex, query: Knex.QueryBuilder, alias: string, viewer: Viewer) => void;
}

const qualify = (columns: readonly string[]) => (alias: string) => columns.map((c) => `${alias}.${c}`);

/** Each kind of project item, with its domain's schema, columns and presenter (one source of truth per field list). */
export const projectItemKinds: readonly ProjectItemKind[] = [
  {
    type: 'asset',
    segment: 'assets',
    idField: 'asset_id',
    schema: assetSchema,
    columns: qualify(assetColumns),
    present: (row) => presentAsset(row as unknown as AssetRow),
  },
  {
    type: 'canvas',
    segment: 'canvases',
    idField: 'canvas_id',
    schema: canvasSchema,
    columns: qualify(canvasColumns),
    present: (row) => presentCanvas(row as unknown as CanvasRow),
  },
  {
    type: 'chat_conversation',
    segment: 'conversations',
    idField: 'conversation_id',
    schema: conversationListItemSchema,
    columns: conversationColumns,
    selectListExtras,
    present: (row) => presentConversationListItem(withListExtras(row)),
  },
  {
    type: 'skill',
    segment: 'skills',
    idField: 'skill_id',
    schema: skillSchema,
    columns: qualify(skillColumns),
    present: (row) => presentSkill(row as unknown as SkillRow),
  },
];

export const kindOf = (type: ProjectItemType): ProjectItemKind => projectItemKinds.find((k) => k.type === type)!;
