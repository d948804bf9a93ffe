import { pageQuery } from '../http/pagination.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { z } from '../http/zod.ts';
import { listItemProjects } from '../projects/membership.ts';
import { presentProject } from '../projects/presenter.ts';
import { projectPage } from '../projects/schema.ts';
import { startLinkImport } from './link-import.ts';
import { extractPrompt, listAssetModels, listVoices } from './model-service.ts';
import { presentAsset } from './presenter.ts';
import { importedParameters, serveAssetFile } from './reads.ts';
import {
  assetIdParams,
  assetModelsSchema,
  assetPage,
  assetSchema,
  createAssetBody,
  importedParametersSchema,
  linkImportBody,
  listAssetsQuery,
  promptBody,
  promptSchema,
  updateAssetBody,
  voicesSchema,
} from './schema.ts';
import { createAsset, deleteAsset, getAsset, listAssets, restoreAsset, updateAsset } from './service.ts';

const tag = 'Assets';

export const assetRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/assets/models',
    operationId: 'listAssetModels',
    summary: 'Models that can read assets (prompt extraction, voice detection)',
    tag,
    response: { status: 200, description: 'The models; `sandbox: true` when they are the offline stand-ins', schema: assetModelsSchema },
    errors: [503],
    handler: async ({ deps }) => listAssetModels(deps),
  }),
  defineRoute({
    method: 'post',
    path: '/assets/imports/link',
    operationId: 'importAssetFromLink',
    summary: 'Import an asset from a URL; a worker downloads it',
    description:
      'Answers at once with the asset in `upload_file_state: in_progress`. A worker downloads the URL (http/https only; loopback, private, link-local and other special addresses are refused, redirects are re-checked; size, time and content-type limits apply), stores the file and sets `type`, `mime_type`, `url` and `success` — or `error` with the reason in `metadata.import_error`. Enrichment follows.',
    tag,
    body: linkImportBody,
    response: { status: 201, description: 'The asset being imported', schema: assetSchema },
    errors: [404],
    handler: async ({ body, caller, deps }) => presentAsset(await startLinkImport(deps, caller, body)),
  }),
  defineRoute({
    method: 'post',
    path: '/assets',
    operationId: 'createAsset',
    summary: 'Create an asset in an organization',
    description: 'The caller becomes its owner. With `content`, enrichment measures it in the background (`enrichment_state: pending`); otherwise `ignored`. 404 when the caller is not a member of the organization.',
    tag,
    body: createAssetBody,
    response: { status: 201, description: 'The new asset', schema: assetSchema },
    errors: [404],
    handler: async ({ body, caller, deps }) => presentAsset(await createAsset(deps, caller, body)),
  }),
  defineRoute({
    method: 'get',
    path: '/assets',
    operationId: 'listAssets',
    summary: 'List the assets of an organization the caller can read',
    description: 'Newest first, keyset-paged. A caller outside the organization gets an empty page.',
    tag,
    query: listAssetsQuery,
    response: { status: 200, description: 'A page of assets', schema: assetPage },
    handler: async ({ query, caller, deps }) => {
      const page = await listAssets(deps, caller, query);
      return { items: page.items.map(presentAsset), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/assets/{asset_id}',
    operationId: 'getAsset',
    summary: 'Get an asset (deleted ones too, with `deleted_at` set)',
    tag,
    params: assetIdParams,
    response: { status: 200, description: 'The asset', schema: assetSchema },
    errors: [404],
    handler: async ({ params, caller, deps }) => presentAsset(await getAsset(deps, caller, params.asset_id)),
  }),
  defineRoute({
    method: 'patch',
    path: '/assets/{asset_id}',
    operationId: 'updateAsset',
    summary: 'Change the title, content, media type or metadata of an asset (editors)',
    tag,
    params: assetIdParams,
    body: updateAssetBody,
    response: { status: 200, description: 'The updated asset', schema: assetSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, deps }) => presentAsset(await updateAsset(deps, caller, params.asset_id, body)),
  }),
  defineRoute({
    method: 'delete',
    path: '/assets/{asset_id}',
    operationId: 'deleteAsset',
    summary: 'Delete an asset (soft delete; owners)',
    tag,
    params: assetIdParams,
    response: { status: 204, description: 'Deleted (also when it already was)' },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => deleteAsset(deps, caller, params.asset_id),
  }),
  defineRoute({
    method: 'post',
    path: '/assets/{asset_id}/restore',
    operationId: 'restoreAsset',
    summary: 'Restore a deleted asset (owners)',
    tag,
    params: assetIdParams,
    response: { status: 200, description: 'The restored asset', schema: assetSchema },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => presentAsset(await restoreAsset(deps, caller, params.asset_id)),
  }),
  defineRoute({
    method: 'get',
    path: '/assets/{asset_id}/projects',
    operationId: 'listAssetProjects',
    summary: 'Live projects holding the asset that the caller can read',
    tag,
    params: assetIdParams,
    query: z.object({ ...pageQuery }),
    response: { status: 200, description: 'A page of projects', schema: projectPage },
    errors: [404],
    handler: async ({ params, query, caller, deps }) => {
      const page = await listItemProjects(deps, caller, 'asset', params.asset_id, query);
      return { items: page.items.map(presentProject), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/assets/{asset_id}/file',
    operationId: 'getAssetFile',
    summary: 'Download the stored file of an imported asset',
    description: 'The bytes with their content type (not JSON). 404 until the import succeeded. Served with `X-Content-Type-Options: nosniff` and a sandboxing CSP; types browsers could execute are sent as attachments.',
    tag,
    params: assetIdParams,
    response: { status: 200, description: 'The file' },
    errors: [404],
    handler: async ({ params, caller, deps, ctx }) => serveAssetFile(deps, caller, params.asset_id, ctx),
  }),
  defineRoute({
    method: 'get',
    path: '/assets/{asset_id}/imported-parameters',
    operationId: 'getAssetImportedParameters',
    summary: 'What a link import recorded: source URL, final URL after redirects, content type, size, outcome',
    tag,
    params: assetIdParams,
    response: { status: 200, description: 'The import parameters', schema: importedParametersSchema },
    errors: [404],
    handler: async ({ params, caller, deps }) => importedParameters(deps, caller, params.asset_id),
  }),
  defineRoute({
    method: 'get',
    path: '/assets/{asset_id}/voices',
    operationId: 'listAssetVoices',
    summary: 'Voices heard in an audio asset',
    description: '409 for assets that are not audio.',
    tag,
    params: assetIdParams,
    response: { status: 200, description: 'The voices; `sandbox: true` when detected by the offline stand-in', schema: voicesSchema },
    errors: [404, 409, 503],
    handler: async ({ params, caller, deps }) => listVoices(deps, caller, params.asset_id),
  }),
  defineRoute({
    method: 'post',
    path: '/assets/{asset_id}/prompt',
    operationId: 'extractAssetPrompt',
    summary: 'Extract a prompt that would re-create the asset',
    description: 'Any reader may ask. 409 while the asset is deleted or still importing; 400 on `model` for a model that cannot read this asset type.',
    tag,
    params: assetIdParams,
    body: promptBody,
    response: { status: 200, description: 'The prompt; `sandbox: true` when derived offline', schema: promptSchema },
    errors: [404, 409, 503],
    handler: async ({ params, body, caller, deps }) => extractPrompt(deps, caller, params.asset_id, body),
  }),
];
