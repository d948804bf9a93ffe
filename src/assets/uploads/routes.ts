import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ZodType } from 'zod';
import { z } from '../../core/zod.ts';
import { holder, publicAccess, signedIn, within } from '../../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../../http/route.ts';
import { headersFor } from '../../http/openapi-headers.ts';
import { createUpload, presentCreated } from './create.ts';
import { createByTus, discovery, TUS_EXTENSIONS } from './creation.ts';
import { CHECKSUM_MAX_CHUNK, originOf, receiveBytes, terminateUpload, uploadStatus } from './protocol.ts';
import { createdUploadSchema, createUploadBody, patchHeaders, tusCreationHeaders, tusHeaders, uploadIdParams, uploadSchema } from './schema.ts';

const tag = 'Assets';
const owner = holder('asset_upload', 'created_by_id');

const header = (description: string, schema: Record<string, unknown> = { type: 'string' }) => ({ description, schema });
const tusResumable = header('`1.0.0`: every tus answer names the protocol version.', { type: 'string', enum: ['1.0.0'] });
const uploadOffset = header('Bytes the upload holds now: where the next PATCH starts.', { type: 'string', pattern: '^\\d+$' });
const uploadExpires = header('While unfinished: when the upload expires (RFC 9110 date).');

/** An answer's headers: the ones every authenticated answer carries (the rate limit, …) and `own`. */
const withStandard = (status: number, own: Record<string, unknown>) => ({ ...headersFor(status, true), ...own });

/** A tus answer ≥ 400: the JSON Error body, with Tus-Resumable. */
const tusError = (status: number, description: string, error: ZodType) => ({
  description,
  headers: withStandard(status, { 'Tus-Resumable': tusResumable }),
  content: { 'application/json': { schema: error } },
});

/** The tus statuses beyond the generated ones, each with the JSON Error body. */
function withTusAnswers(operation: RouteConfig, error: ZodType, answers: Record<number, string>): RouteConfig {
  const responses = { ...operation.responses };
  for (const [status, description] of Object.entries(answers)) responses[status] = tusError(Number(status), description, error);
  for (const status of ['404', '410']) {
    const existing = responses[status] as { description?: string } | undefined;
    if (existing) responses[status] = tusError(Number(status), existing.description ?? 'Error', error);
  }
  return { ...operation, responses };
}

const patchAnswers = {
  409: 'Upload-Offset is not the upload’s offset (HEAD it), or the upload is completed already',
  410: 'The upload ended: expired, terminated, or its asset deleted',
  413: 'More bytes than the upload’s length (or than an Upload-Checksum request may carry)',
  422: 'The finished bytes failed their checks (size, checksum_sha256, type, text): the asset is `error`',
  423: 'Another request, in this or another web process, is writing to the upload: retry (tus-js-client does), HEAD for the offset',
  460: 'Upload-Checksum does not match the request’s bytes; none were kept',
};

export const uploadRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/assets/uploads',
    operationId: 'createAssetUpload',
    idempotent: {},
    summary: 'Start a resumable upload (tus 1.0) of a file into a new asset',
    description: [
      'Creates the asset (`upload_file_state: in_progress`) and its tus upload (Upload-Length = `size`, offset 0) and answers both; `Location` is the asset. ',
      'Send the bytes to `upload.url` with the tus protocol and your bearer token: `HEAD` for the offset, `PATCH` from it (tus-js-client `uploadUrl`, Uppy, or one `curl -X PATCH`). ',
      'Only the creator may use the upload URL. Limits are checked before a byte is sent: a file over `UPLOAD_MAX_FILE_BYTES` is 413; when the organization’s uploads (finished and in progress) would pass `UPLOAD_ORGANIZATION_LIMIT_BYTES`, 409. ',
      'The last PATCH verifies `size`, `checksum_sha256` and the type (sniffed from the bytes; text must decode in its charset), stores the file, sets `success` and enqueues enrichment — or sets `error` with the reason in `import_error`. ',
      'An upload not finished by `expires_at` (`UPLOAD_EXPIRES_SECONDS`) ends `expired`, its asset `error`, its bytes removed.',
    ].join(''),
    tag,
    body: createUploadBody,
    response: { status: 201, description: 'The asset and its upload', schema: createdUploadSchema },
    errors: [403, 409, 413],
    authorize: within('body', 'resources.create'),
    // The asset is what was created (the upload is its way in): replays answer the same Location.
    location: (_params, answer) => `/assets/${(answer as { asset: { id: string } }).asset.id}`,
    handler: async ({ body, actor, deps, ctx }) => {
      return createUpload(deps, actor, body, presentCreated(originOf(deps, ctx)));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/asset-uploads',
    operationId: 'createAssetUploadByTus',
    idempotent: { mode: 'transaction' },
    summary: 'tus: create an upload (and its asset), optionally with its first bytes',
    description: [
      'The tus creation request (creation and creation-with-upload extensions), for clients given the endpoint (tus-js-client `endpoint`, Uppy): the same upload as `POST /assets/uploads` — the same limits, authorization (`resources.create` in the organization) and Error bodies — with its fields in headers. ',
      '`Upload-Length` is `size`; `Upload-Metadata` carries `organization_id`, `filename`, `filetype` (the media type), and optionally `title`, `project_id` and `checksum_sha256`, each base64 as tus says (other keys are ignored). ',
      'An Error body names the header and key at fault (`Upload-Metadata.filetype`). `Upload-Defer-Length` is not supported (400). ',
      'A body with `Content-Type: application/offset+octet-stream` is the upload’s first bytes (as a PATCH at offset 0; the last byte finishes the upload, as PATCH does); the answer’s `Upload-Offset` says how many were kept. ',
      '201: `Location` is the upload URL (HEAD/PATCH/DELETE it with your bearer token), the body the asset and the upload. Should the bytes fail (a 4xx after the upload was created), `Location` still names the upload. ',
      'With Idempotency-Key, a replay answers the first creation and takes no bytes: HEAD the upload and resume.',
    ].join(''),
    tag,
    headers: tusCreationHeaders,
    response: { status: 201, description: 'The upload (Location) and its asset', schema: createdUploadSchema },
    errors: [403, 409, 413, 422],
    authorize: signedIn('resources.create in Upload-Metadata organization_id, checked by the handler'),
    location: (_params, answer) => (answer as { upload: { url: string } }).upload.url,
    handler: async ({ actor, deps, ctx, idempotency }) => createByTus(deps, actor, ctx, idempotency, 'createAssetUploadByTus'),
    document: (operation, error) => {
      const answered = withTusAnswers(operation, error, {
        409: 'The organization’s uploads would pass its storage limit, or (with a body) the bytes do not start at offset 0',
        413: 'Upload-Length is over the largest file (Tus-Max-Size), or the body is longer than Upload-Length',
        422: 'A body that was the whole file failed its checks: the asset is `error`',
        460: 'Upload-Checksum does not match the body; the upload exists (Location) with none of it',
      });
      const created = answered.responses[201] as ResponseConfig;
      return [
        {
          ...answered,
          request: {
            ...operation.request,
            body: {
              required: false,
              description: 'creation-with-upload: the first bytes of the file (offset 0).',
              content: { 'application/offset+octet-stream': { schema: z.string().openapi({ format: 'binary' }) } },
            },
          },
          responses: {
            ...answered.responses,
            201: {
              ...created,
              headers: {
                ...created.headers,
                'Tus-Resumable': tusResumable,
                Location: header('The upload URL (absolute): HEAD, PATCH and DELETE it.'),
                'Upload-Offset': uploadOffset,
                'Upload-Expires': uploadExpires,
              },
            },
          },
        },
      ];
    },
  }),
  defineRoute({
    method: 'get',
    path: '/asset-uploads/{upload_id}',
    operationId: 'getAssetUpload',
    summary: 'An upload’s progress and outcome (`HEAD`: the tus offset)',
    description:
      'JSON: offset, state and, once ended other than `completed`, why. `HEAD` is the tus offset request: `Upload-Offset` and `Upload-Length` (410 once the upload ended other than completed). Only the upload’s creator sees it (404 for anyone else).',
    tag,
    params: uploadIdParams,
    response: { status: 200, description: 'The upload', schema: uploadSchema },
    errors: [404],
    authorize: owner,
    handler: async ({ params, actor, deps, ctx }) => uploadStatus(deps, actor, params.upload_id, ctx),
    document: (operation, error) => {
      const headers = {
        'Tus-Resumable': tusResumable,
        'Upload-Offset': uploadOffset,
        'Upload-Length': header('The upload’s size.'),
        'Upload-Expires': uploadExpires,
      };
      const get = withTusAnswers(operation, error, {});
      const ok = get.responses[200]!;
      const head: RouteConfig = {
        ...get,
        method: 'head',
        operationId: 'headAssetUpload',
        summary: 'tus: the upload’s offset',
        description:
          'The tus HEAD request: where to resume. `Cache-Control: no-store`. 410 once the upload ended other than completed (the reason in the Error body).',
        request: { ...get.request, headers: tusHeaders.extend((get.request?.headers as z.ZodObject | undefined)?.shape ?? {}) },
        responses: {
          ...withTusAnswers(operation, error, { 410: 'The upload ended: expired, canceled or failed its checks' }).responses,
          200: { description: 'The offset, in headers (no body)', headers: withStandard(200, headers) },
        },
      };
      return [{ ...get, responses: { ...get.responses, 200: { ...ok, headers: withStandard(200, headers) } } }, head];
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/asset-uploads/{upload_id}',
    operationId: 'patchAssetUpload',
    summary: 'tus: send bytes of the upload',
    description: [
      'The tus PATCH request: the bytes from `Upload-Offset` (which must be the upload’s offset, else 409). A connection lost half-way keeps what arrived: `HEAD` and resume from there. ',
      `With \`Upload-Checksum: sha256 <base64>\` (at most ${CHECKSUM_MAX_CHUNK} bytes in that request) bytes that do not hash to it answer 460 and none are kept. `,
      'The request that brings the last byte also finishes the upload: it answers 204 once the file is verified and stored (the asset is `success`, enrichment enqueued), or 422 with the reason (size, checksum or type mismatch; the asset is `error`, the bytes removed). ',
      '410 once the upload expired, was terminated or its asset deleted. ',
      'One request writes to an upload at a time, whichever web process serves it (a lock in the database): another one meanwhile is 423. Within one process a new request for the upload asks the one writing to stop (a client resuming after a dropped connection is not kept waiting by the dead request).',
    ].join(''),
    tag,
    params: uploadIdParams,
    headers: patchHeaders,
    response: { status: 204, description: 'Bytes written; `Upload-Offset` is the new offset' },
    errors: [404, 409, 413, 422],
    authorize: owner,
    handler: async ({ params, actor, deps, ctx }) => receiveBytes(deps, actor, params.upload_id, ctx),
    document: (operation, error) => {
      const answered = withTusAnswers(operation, error, patchAnswers);
      return [
        {
          ...answered,
          request: {
            ...operation.request,
            body: {
              required: true,
              description: 'The bytes, from `Upload-Offset`.',
              content: { 'application/offset+octet-stream': { schema: z.string().openapi({ format: 'binary' }) } },
            },
          },
          responses: {
            ...answered.responses,
            204: {
              description: 'Bytes written',
              headers: withStandard(204, { 'Tus-Resumable': tusResumable, 'Upload-Offset': uploadOffset, 'Upload-Expires': uploadExpires }),
            },
          },
        },
      ];
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/asset-uploads/{upload_id}',
    operationId: 'terminateAssetUpload',
    summary: 'tus: terminate an unfinished upload',
    description:
      'The tus termination request: the upload ends `canceled`, its asset `error`, its bytes are removed. Repeating it changes nothing; a completed upload is 409 (delete the asset instead).',
    tag,
    params: uploadIdParams,
    headers: tusHeaders,
    response: { status: 204, description: 'Terminated' },
    errors: [404, 409],
    authorize: owner,
    handler: async ({ params, actor, deps, ctx }) => terminateUpload(deps, actor, params.upload_id, ctx),
    document: (operation, error) => [withTusAnswers(operation, error, {})],
  }),
];

/** Served before authentication: browsers send OPTIONS without credentials, and it tells only what the server speaks. */
export const tusDiscoveryRoutes: AnyRoute[] = [
  defineRoute({
    method: 'options',
    path: '/asset-uploads',
    operationId: 'discoverAssetUploads',
    summary: 'tus: what this server supports (discovery)',
    description: `The tus OPTIONS request: \`Tus-Version\` (1.0.0), \`Tus-Extension\` (${TUS_EXTENSIONS.join(', ')}), \`Tus-Max-Size\` (UPLOAD_MAX_FILE_BYTES) and \`Tus-Checksum-Algorithm\` (sha256). No token needed.`,
    tag,
    public: true,
    response: { status: 204, description: 'What the server supports, in headers' },
    authorize: publicAccess('tus discovery: the server’s capabilities only'),
    handler: async ({ deps, ctx }) => discovery(deps, ctx),
    document: (operation) => [
      {
        ...operation,
        responses: {
          ...operation.responses,
          204: {
            description: 'What the server supports, in headers',
            headers: {
              ...headersFor(204, false),
              'Tus-Resumable': tusResumable,
              'Tus-Version': header('Protocol versions served: `1.0.0`.'),
              'Tus-Extension': header(`Extensions served: \`${TUS_EXTENSIONS.join(',')}\`.`),
              'Tus-Max-Size': header('The largest upload, in bytes (UPLOAD_MAX_FILE_BYTES).', { type: 'string', pattern: '^\\d+$' }),
              'Tus-Checksum-Algorithm': header('Algorithms for Upload-Checksum: `sha256`.'),
            },
          },
        },
      },
    ],
  }),
];
