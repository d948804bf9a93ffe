// The generations domain's public module.
export { generationModelCatalog, type GenerationModelRow } from './models.ts';
