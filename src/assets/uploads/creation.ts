import type { Context } from 'koa';
import type { Actor } from '../../access/index.ts';
import { AppError, type ErrorIssue, isAppError } from '../../core/errors.ts';
import type { Deps } from '../../platform/deps.ts';
import { type IdempotentRequest, requestHash, withIdempotency } from '../../platform/idempotency.ts';
import { createUpload, type NewUpload, presentCreated } from './create.ts';
import { appendBytes, originOf, TUS, tusError } from './protocol.ts';
import { findUpload } from './rows.ts';
import { createUploadBody } from './schema.ts';

/*
 * tus creation (`POST /asset-uploads`, the creation and creation-with-upload extensions): the same
 * upload as `POST /assets/uploads` — same fields, limits, authorization and Error bodies — with its
 * fields in the tus headers. Upload-Length is the size; Upload-Metadata carries the rest.
 */

/** Upload-Metadata keys and the creation fields they are (other keys, which tus clients add freely, are ignored). */
const metadataKeys = {
  organization_id: 'organization_id',
  filename: 'filename',
  filetype: 'mime_type',
  title: 'title',
  project_id: 'project_id',
  checksum_sha256: 'checksum_sha256',
} as const;

/** Where a creation field is in a tus request: the header (and metadata key) an Error body names. */
const tusPathOf = (field: string | number | undefined): string[] => {
  if (field === 'size') return ['Upload-Length'];
  const key = Object.entries(metadataKeys).find(([, name]) => name === field)?.[0];
  return ['Upload-Metadata', key ?? String(field)];
};

const invalid = (path: string[], message: string) => new AppError('validation_failed', `${path.join('.')}: ${message}`, [{ path, message }], { headers: TUS });

/**
 * `key base64,key2 base64,…` (tus 1.0: keys unique, without spaces or commas; values base64, read
 * as UTF-8; a key may come without a value).
 */
export function parseMetadata(header: string): Record<string, string> {
  const metadata: Record<string, string> = {};
  if (!header.trim()) return metadata;
  for (const pair of header.split(',')) {
    const [key = '', value = '', ...rest] = pair.trim().split(' ');
    if (!key || rest.length) throw invalid(['Upload-Metadata'], `"${pair.trim()}" is not a pair "key base64value"`);
    if (key in metadata) throw invalid(['Upload-Metadata', key], 'appears twice (keys must be unique)');
    if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(value)) throw invalid(['Upload-Metadata', key], 'the value must be base64');
    let decoded: string;
    try {
      decoded = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(value, 'base64'));
    } catch {
      throw invalid(['Upload-Metadata', key], 'the value must be base64 of UTF-8 text');
    }
    // As every request string (src/http/route.ts): Postgres refuses NUL in text.
    if (decoded.includes('\0')) throw invalid(['Upload-Metadata', key], 'must not contain the NUL character (U+0000)');
    metadata[key] = decoded;
  }
  return metadata;
}

/** The creation fields of a tus request, checked by the schema POST /assets/uploads uses (its rules, named in tus terms). */
export function uploadFromTus(uploadLength: string, uploadMetadata: string): NewUpload {
  const metadata = parseMetadata(uploadMetadata);
  const fields: Record<string, unknown> = { size: /^\d+$/.test(uploadLength) ? Number(uploadLength) : uploadLength };
  for (const [key, field] of Object.entries(metadataKeys)) if (metadata[key] !== undefined) fields[field] = metadata[key];
  const parsed = createUploadBody.safeParse(fields);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({ path: tusPathOf(issue.path[0] as string), message: issue.message }));
  throw new AppError('validation_failed', `${issues[0]!.path.join('.')}: ${issues[0]!.message}`, issues, { headers: TUS });
}

/** An error of the creation, its fields renamed to the headers they came in (`size` → Upload-Length, …). */
function inTusTerms(error: unknown): unknown {
  if (!isAppError(error)) return error;
  const renamed = (issue: ErrorIssue) => ({ ...issue, path: [...tusPathOf(issue.path[0]), ...issue.path.slice(1).map(String)] });
  const field = error.issues[0]?.path[0];
  const message =
    field !== undefined && error.message.startsWith(`${field}:`) ? `${tusPathOf(field).join('.')}${error.message.slice(String(field).length)}` : error.message;
  return new AppError(error.code, message, error.issues.map(renamed), { status: error.status, headers: { ...error.headers, ...TUS } });
}

/**
 * POST /asset-uploads: parse (400) → authorize (`resources.create` in the organization: 403) →
 * create (413/409 limits) → with a body (creation-with-upload), its bytes from offset 0. The 201
 * is the upload (Location) with the asset; a failure of the bytes still names the upload in Location.
 */
export async function createByTus(deps: Deps, actor: Actor, ctx: Context, idempotency: IdempotentRequest | undefined, operation: string) {
  if (ctx.get('upload-defer-length'))
    throw tusError('validation_failed', 400, 'Upload-Defer-Length: not supported: send Upload-Length, the size of the file', ['Upload-Defer-Length']);
  const input = uploadFromTus(ctx.get('upload-length'), ctx.get('upload-metadata'));
  await actor.within(input.organization_id, 'resources.create');
  // Its own key scope and request hash: the fields are in the headers, not a JSON body.
  const request = idempotency && { ...idempotency, organizationId: input.organization_id, requestHash: requestHash(operation, input) };
  const answer = await createUpload(deps, actor, input, presentCreated(originOf(deps, ctx)), (act) => withIdempotency(deps.db, request, act, 201)).catch(
    (error: unknown) => {
      throw inTusTerms(error);
    },
  );
  ctx.set({ ...TUS, 'Upload-Offset': '0', 'Upload-Expires': new Date(answer.upload.expires_at).toUTCString() });
  // A replay answers the first creation; its bytes, if any, are not taken again (HEAD the upload and resume).
  const replayed = ctx.response.get('Idempotent-Replayed') === 'true';
  if (ctx.get('content-type') !== 'application/offset+octet-stream' || replayed) return answer;
  const headers = new Headers({ 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' });
  if (ctx.get('content-length')) headers.set('content-length', ctx.get('content-length'));
  try {
    await appendBytes(deps, (await findUpload(deps.db, answer.upload.id))!, ctx, headers);
  } catch (error) {
    if (isAppError(error))
      throw new AppError(error.code, error.message, error.issues, { status: error.status, headers: { ...error.headers, Location: answer.upload.url } });
    throw error;
  }
  const offset = Number(ctx.response.get('Upload-Offset'));
  if (offset === answer.upload.size) ctx.remove('Upload-Expires');
  const upload = (await findUpload(deps.db, answer.upload.id))!;
  return { ...answer, upload: { ...answer.upload, offset, state: upload.state } };
}

/** OPTIONS (tus discovery): what this server speaks, for any caller (no token: browsers send none with OPTIONS). */
export function discovery(deps: Pick<Deps, 'config'>, ctx: Context): void {
  ctx.set({
    ...TUS,
    'Tus-Version': '1.0.0',
    'Tus-Extension': TUS_EXTENSIONS.join(','),
    'Tus-Max-Size': String(deps.config.UPLOAD_MAX_FILE_BYTES),
    'Tus-Checksum-Algorithm': 'sha256',
  });
}

/** Exactly what is served: no creation-defer-length (Upload-Length is required), no concatenation. */
export const TUS_EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'checksum', 'expiration'];
