import { defineResourceType, qualified } from '../access/index.ts';
import { assetColumns, type AssetRow, presentAsset } from './presenter.ts';
import { assetIdParams, assetSchema } from './schema.ts';

declare module '../access/index.ts' {
  interface ResourceTypeNames {
    asset: true;
  }
}

/** An asset: filed in projects; the chat or canvas that made it, and those that reference it, pass their audience on. */
export const assetResource = defineResourceType<AssetRow>({
  type: 'asset',
  table: 'assets',
  noun: 'asset',
  activity: 'asset',
  titleColumn: 'title',
  origins: [
    { column: 'origin_conversation_id', from: 'chat_conversation' },
    { column: 'origin_canvas_id', from: 'canvas' },
  ],
  referencedBy: ['chat_conversation', 'canvas'],
  api: { path: '/assets', idParams: assetIdParams, tag: 'Assets', schema: assetSchema, present: presentAsset },
  project: { schema: assetSchema, columns: qualified(assetColumns), present: (row) => presentAsset(row as unknown as AssetRow) },
  library: { subtype: 't.type' },
  inventory: { project: 'filed' },
});
