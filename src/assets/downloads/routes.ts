import { publicAccess, resource } from '../../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../../http/route.ts';
import { assetIdParams } from '../schema.ts';
import { downloadUrlBody, downloadUrlSchema, signedFileParams, signedFileQuery } from './schema.ts';
import { createDownloadUrl, serveSignedFile } from './service.ts';

const tag = 'Assets';

export const downloadRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/assets/{asset_id}/download-url',
    operationId: 'createAssetDownloadUrl',
    summary: 'A short-lived URL that downloads the asset’s file without a token (an `<img src>`, a shared link)',
    description:
      'A presigned object-storage GET when object storage is configured, else a URL of this API signed with HMAC (`GET /asset-files/{asset_id}`). Lifetime `expires_in` (default 300 s). The API-served URL re-checks on every use that the user it was made for can still read the asset and that it is not deleted, so a revoked grant or a deleted asset fails at once; a presigned one fails at its expiry. 409 for a deleted asset; 404 until the file is stored.',
    tag,
    params: assetIdParams,
    body: downloadUrlBody,
    response: { status: 200, description: 'The URL and when it stops working', schema: downloadUrlSchema },
    errors: [404, 409],
    authorize: resource('asset', 'read', 'asset_id'),
    handler: async ({ params, body, actor, deps, ctx }) => createDownloadUrl(deps, actor, params.asset_id, body, ctx),
  }),
];

/** Served before authentication: the signature is the credential. */
export const signedFileRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/asset-files/{asset_id}',
    operationId: 'getSignedAssetFile',
    summary: 'Download an asset’s file through a signed URL (from POST /assets/{asset_id}/download-url)',
    description:
      'No token: the query’s HMAC signature is the credential, valid until `expires`, and only while the user it was made for can read the asset and the asset is not deleted (404 otherwise, the same for every refusal). Range (206) and ETag/If-None-Match (304) as on `GET /assets/{asset_id}/file`; `X-Content-Type-Options: nosniff`; HTML, SVG and XML always as attachments.',
    tag,
    public: true,
    params: signedFileParams,
    query: signedFileQuery,
    response: { status: 200, description: 'The file (206 for a Range, 304 when If-None-Match matches)' },
    errors: [404],
    authorize: publicAccess('the signed URL is the credential'),
    answersItself: true,
    handler: async ({ params, query, deps, ctx }) => serveSignedFile(deps, params.asset_id, query, ctx),
  }),
];
