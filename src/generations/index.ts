// The generations domain's public module.
export { generationModelCatalog, type GenerationModelRow } from './models.ts';
export { generationSchema } from './schema.ts';
export { readableGenerationSql } from './readable.ts';
export { createGeneration } from './service.ts';
export type { GenerationRow } from './presenter.ts';
