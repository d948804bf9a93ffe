import { resourceRoutes } from '../http/resource-routes.ts';
import { assetResource } from './resource.ts';
import { defineRoute, type AnyRoute, LARGE_BODY_LIMIT } from '../http/route.ts';
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
  thumbnailParams,
  updateAssetBody,
  voicesSchema,
} from './schema.ts';
import { createAsset, deleteAsset, getAsset, listAssets, presentListedAsset, restoreAsset, updateAsset } from './service.ts';
import { serveThumbnail } from './thumbnails.ts';
import { resource, signedIn, within } from '../http/authorize.ts';

const tag = 'Assets';
const asset = resourceRoutes(assetResource);

export const assetRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/assets/models',
    operationId: 'listAssetModels',
    summary: 'Models that can read assets (prompt extraction, voice detection)',
    tag,
    response: { status: 200, description: 'The models; `sandbox: true` when they are the offline stand-ins', schema: assetModelsSchema },
    errors: [503],
    authorize: signedIn('the models are the same for everyone'),
    handler: async ({ deps }) => listAssetModels(deps),
  }),
  defineRoute({
    method: 'post',
    path: '/assets/imports/link',
    operationId: 'importAssetFromLink',
    idempotent: {},
    summary: 'Import an asset from a URL; a worker downloads it',
    description:
      'Answers at once with the asset in `upload_file_state: in_progress`. A worker downloads the URL (http/https only; loopback, private, link-local and other special addresses are refused, redirects are re-checked; size, time and content-type limits apply), stores the file and sets `type`, `mime_type`, `url` and `success` — or `error` with the reason in `import_error`. Enrichment follows.',
    tag,
    body: linkImportBody,
    response: { status: 201, description: 'The asset being imported', schema: assetSchema },
    errors: [403],
    authorize: within('body', 'resources.create'),
    handler: async ({ body, actor, deps }) => presentAsset(await startLinkImport(deps, actor, body)),
  }),
  asset.create({
    path: '/assets',
    operationId: 'createAsset',
    summary: 'Create an asset in an organization',
    description:
      'The caller becomes its owner. With `content`, enrichment measures it in the background (`enrichment_state: pending`); otherwise `ignored`. 403 when the caller is not a member of the organization or lacks `resources.create`.',
    body: createAssetBody,
    bodyLimit: LARGE_BODY_LIMIT,
    run: createAsset,
  }),
  asset.list({
    path: '/assets',
    operationId: 'listAssets',
    summary: 'List the assets of an organization the caller can read',
    description:
      'Newest first, keyset-paged. A caller outside the organization gets an empty page. With `q`, a full-text search of the title and the extracted text (enrichment) instead: live assets only, best match first (the newest 2,000 matches are ranked), keyset-paged on rank and id, each item with `search: {rank, snippet}`; filtered by access in the query like the list.',
    query: listAssetsQuery,
    page: assetPage,
    run: listAssets,
    presentItem: presentListedAsset,
  }),
  asset.get({ path: '/assets/{asset_id}', operationId: 'getAsset', summary: 'Get an asset (deleted ones too, with `deleted_at` set)', run: getAsset }),
  asset.update({
    path: '/assets/{asset_id}',
    operationId: 'updateAsset',
    summary: 'Change the title, content, media type or metadata of an asset (editors)',
    body: updateAssetBody,
    bodyLimit: LARGE_BODY_LIMIT,
    run: updateAsset,
  }),
  asset.remove({ path: '/assets/{asset_id}', operationId: 'deleteAsset', summary: 'Delete an asset (soft delete; owners)', run: deleteAsset }),
  asset.restore({ path: '/assets/{asset_id}/restore', operationId: 'restoreAsset', summary: 'Restore a deleted asset (owners)', run: restoreAsset }),
  defineRoute({
    method: 'get',
    path: '/assets/{asset_id}/file',
    operationId: 'getAssetFile',
    summary: 'Download the stored file of an imported or uploaded asset',
    description:
      'The bytes with their content type (not JSON). 404 until the import or upload succeeded. `Range` (RFC 9110: one satisfiable range is 206 with Content-Range; a set with none satisfiable is 416 with `Content-Range: bytes */size`; an invalid header such as `bytes=5-1`, another unit, or several satisfiable ranges get the whole file, 200), `ETag` (the SHA-256) with `If-None-Match` (304) and `If-Range`. Served with `X-Content-Type-Options: nosniff` and a sandboxing CSP; HTML, SVG, XML and other types browsers could execute are always attachments.',
    tag,
    params: assetIdParams,
    response: { status: 200, description: 'The file (206 for a Range, 304 when If-None-Match matches)' },
    errors: [404],
    authorize: resource('asset', 'read', 'asset_id'),
    answersItself: true,
    handler: async ({ params, actor, deps, ctx }) => serveAssetFile(deps, actor, params.asset_id, ctx),
  }),
  defineRoute({
    method: 'get',
    path: '/assets/{asset_id}/thumbnails/{size}',
    operationId: 'getAssetThumbnail',
    summary: 'Download a thumbnail of an image asset (WebP)',
    description:
      'The WebP bytes (not JSON), upright, within `size` pixels on the longer edge; the asset lists them in `enrichment.thumbnails`. 404 until enrichment made them.',
    tag,
    params: thumbnailParams,
    response: { status: 200, description: 'The thumbnail' },
    errors: [404],
    authorize: resource('asset', 'read', 'asset_id'),
    handler: async ({ params, actor, deps, ctx }) => serveThumbnail(deps, actor, params.asset_id, Number(params.size), ctx),
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
    authorize: resource('asset', 'read', 'asset_id'),
    handler: async ({ params, actor, deps }) => importedParameters(deps, actor, params.asset_id),
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
    authorize: resource('asset', 'read', 'asset_id'),
    handler: async ({ params, actor, deps }) => listVoices(deps, actor, params.asset_id),
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
    authorize: resource('asset', 'read', 'asset_id'),
    handler: async ({ params, body, actor, deps }) => extractPrompt(deps, actor, params.asset_id, body),
  }),
];
