// The assets domain's public module: what other domains may import from it.
export { type AssetRow, assetColumns, presentAsset } from './presenter.ts';
export { recordAssetEvent } from './events.ts';
export { assetIdParams, assetSchema } from './schema.ts';
export { type GeneratedAsset, generatedAssetKey, insertGeneratedAssets, measureGeneratedFile } from './generated.ts';
export { type AssetSearchHit, searchAssets } from './search.ts';
export { type AssetFilters, listAssets } from './service.ts';
