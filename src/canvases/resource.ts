import { defineResourceType, qualified } from '../access/index.ts';
import { canvasColumns, type CanvasRow, presentCanvas } from './presenter.ts';
import { canvasIdParams, canvasSchema } from './schema.ts';

declare module '../access/index.ts' {
  interface ResourceTypeNames {
    canvas: true;
  }
}

/** A canvas: filed in projects; passes its audience on to the assets made on it and those it references. */
export const canvasResource = defineResourceType<CanvasRow>({
  type: 'canvas',
  table: 'canvases',
  noun: 'canvas',
  activity: 'canvas',
  titleColumn: 'title',
  kind: 'canvas',
  api: { path: '/canvases', idParams: canvasIdParams, tag: 'Canvases', schema: canvasSchema, present: presentCanvas },
  project: { schema: canvasSchema, columns: qualified(canvasColumns), present: (row) => presentCanvas(row as unknown as CanvasRow) },
  library: {},
  inventory: { project: 'project_id' },
});
