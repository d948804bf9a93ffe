// The canvases domain's public module: what other domains may import from it.
export { type CanvasRow, canvasColumns, presentCanvas } from './presenter.ts';
export { canvasIdParams, canvasSchema } from './schema.ts';
