import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { Actor } from '../../access/index.ts';
import { AppError, conflict } from '../../core/errors.ts';
import type { Deps } from '../../platform/deps.ts';
import { abandonUpload, type FinishOutcome, finishUpload, outcomeOf } from './finish.ts';
import { findUpload, presentUpload, type UploadRow } from './rows.ts';
import { UPLOADS_PATH, uploadStore } from './store.ts';
import { mayStillUpload, type UploaderAccess, uploaderAccessColumns } from './uploader.ts';

/*
 * The tus 1.0 endpoints of one upload (HEAD, PATCH, DELETE), bridged to @tus/server: our side
 * decides who may use the upload and whether it is still open, and answers every refusal with the
 * JSON Error body (plus Tus-Resumable); the tus server does the protocol itself (offsets, lengths,
 * expiry, writing to its store). The finishing PATCH verifies and keeps the file before it answers.
 */

export const TUS = { 'Tus-Resumable': '1.0.0' };
/** The largest PATCH a `Upload-Checksum` may cover: its bytes are held until they check out. */
export const CHECKSUM_MAX_CHUNK = 64 * 1024 * 1024;

export const tusError = (code: AppError['code'], status: number, message: string, path: string[] = []) =>
  new AppError(code, message, path.length ? [{ path, message }] : [], { status, headers: TUS });

const completedError = () => tusError('conflict', 409, 'the upload is completed already; its bytes are the asset’s file');

const endedError = (outcome: Exclude<FinishOutcome, { state: 'completed' }>) =>
  outcome.state === 'failed'
    ? tusError('validation_failed', 422, `the upload failed its checks: ${outcome.error.message}`, ['upload'])
    : tusError('not_found', 410, `the upload is ${outcome.state}: ${outcome.error.message}`);

/** An upload as the tus endpoints read it: with whether its asset is deleted and whom it may still act for (one query per request). */
type OpenedUpload = UploadRow & UploaderAccess & { asset_deleted_at: Date | null };

/**
 * The caller's own upload, while they may still create in its organization and project (checked at
 * every request: a removed or demoted member's next request lands nothing); anyone else's is as
 * unknown to them as a missing one (404).
 */
async function ownUpload(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<OpenedUpload> {
  const upload = (await deps
    .db('asset_uploads as u')
    .join('assets as a', 'a.id', 'u.asset_id')
    .where('u.id', id)
    .first('u.*', 'a.deleted_at as asset_deleted_at', ...uploaderAccessColumns(deps.db))) as OpenedUpload | undefined;
  if (!upload || upload.created_by_id !== actor.userId || !(await mayStillUpload(deps.db, actor, upload))) throw tusError('not_found', 404, 'upload not found');
  return upload;
}

/**
 * Ends an open upload that may take no more bytes: past its expiry, or its asset deleted. Null
 * while it is open; the ended outcome otherwise (also for one that had ended before).
 */
async function closedOutcome(deps: Pick<Deps, 'config' | 'db' | 'providers'>, upload: OpenedUpload): Promise<FinishOutcome | null> {
  if (upload.state === 'completed') return { state: 'completed', sha256: upload.sha256! };
  if (upload.state !== 'in_progress') return { state: upload.state, error: upload.error! };
  if (upload.expires_at.getTime() <= Date.now())
    return abandonUpload(deps, upload.id, 'expired', { code: 'upload_expired', message: `the upload was not finished by ${upload.expires_at.toISOString()}` });
  if (upload.asset_deleted_at) return abandonUpload(deps, upload.id, 'canceled', { code: 'asset_deleted', message: 'the asset was deleted during its upload' });
  return null;
}

/** GET (JSON) and HEAD (tus: Upload-Offset, Upload-Length) of an upload. */
export async function uploadStatus(deps: Deps, actor: Actor, id: string, ctx: Context) {
  const opened = await ownUpload(deps, actor, id);
  let upload: UploadRow = opened;
  const size = Number(upload.size);
  let ended = await closedOutcome(deps, opened);
  let offset = size;
  if (!ended) {
    offset = await uploadStore(deps)
      .datastore.getUpload(id)
      .then((stored) => stored.offset)
      .catch((error: { status_code?: number; body?: string }) => {
        // The store lost it (its bytes removed under it): the tus server's answer, as an Error body.
        if (error.status_code) throw fromTus(error.status_code, String(error.body ?? '').trim());
        throw error;
      });
    // Every byte arrived but the finish did not run (the process stopped in between): finish now.
    if (offset === size) ended = await finishUpload(deps, id);
  }
  if (ended) upload = (await findUpload(deps.db, id))!;
  ctx.set({ ...TUS, 'Cache-Control': 'no-store', 'Upload-Length': String(size) });
  if (ended && ended.state !== 'completed') {
    // tus clients read a HEAD's status: an ended upload is gone (410) to them; GET describes it.
    if (ctx.method === 'HEAD') throw endedError(ended);
    offset = 0;
  }
  ctx.set('Upload-Offset', String(offset));
  if (!ended) ctx.set('Upload-Expires', upload.expires_at.toUTCString());
  return presentUpload(upload, originOf(deps, ctx), offset);
}

export const originOf = (deps: Pick<Deps, 'config'>, ctx: Context) => deps.config.PUBLIC_URL || `${ctx.protocol}://${ctx.host}`;

/** PATCH: bytes at Upload-Offset, through the tus server; the last ones finish the upload. */
export async function receiveBytes(deps: Deps, actor: Actor, id: string, ctx: Context): Promise<void> {
  const upload = await ownUpload(deps, actor, id);
  const ended = await closedOutcome(deps, upload);
  if (ended?.state === 'completed') throw completedError();
  if (ended) throw endedError(ended);
  const headers = new Headers();
  for (const name of ['tus-resumable', 'upload-offset', 'content-type', 'content-length', 'upload-length']) {
    const value = ctx.get(name);
    if (value) headers.set(name, value);
  }
  await appendBytes(deps, upload, ctx, headers);
}

/**
 * Hands the request's bytes to the tus server as a PATCH with `headers` (it checks the offset and
 * the length, and writes them); the last byte finishes the upload before this returns. Sets the
 * answer's Upload-Offset (and Upload-Expires while unfinished).
 */
export async function appendBytes(deps: Deps, upload: UploadRow, ctx: Context, headers: Headers): Promise<void> {
  const body = ctx.get('upload-checksum') ? await checkedBody(ctx) : requestBytes(ctx);
  const request = new Request(`http://uploads.internal${UPLOADS_PATH}/${upload.id}`, { method: 'PATCH', headers, body, duplex: 'half' } as RequestInit);
  const response = await uploadStore(deps).tus.handleWeb(request);
  if (response.status === 404 || response.status === 410) {
    // The bytes went away since this request checked the upload: it ended meanwhile (another request finished it, say).
    const ended = outcomeOf((await findUpload(deps.db, upload.id))!);
    if (ended) throw ended.state === 'completed' ? completedError() : endedError(ended);
  }
  if (response.status >= 400) throw fromTus(response.status, (await response.text()).trim());
  const offset = Number(response.headers.get('upload-offset'));
  ctx.set({ ...TUS, 'Upload-Offset': String(offset) });
  const expires = response.headers.get('upload-expires');
  if (expires) ctx.set('Upload-Expires', expires);
  if (offset !== Number(upload.size)) return;
  const outcome = await finishUpload(deps, upload.id);
  if (outcome.state !== 'completed') throw endedError(outcome);
}

/**
 * The request's bytes as the web stream the tus server reads, pulled from the socket one chunk at a
 * time (so they stream, never held) and handed over as they are: `Readable.toWeb` would copy every
 * chunk into a new array, which cost more than writing the bytes (bench:uploads).
 */
function requestBytes(ctx: Context): ReadableStream<Uint8Array> {
  return ReadableStream.from(ctx.req as AsyncIterable<Uint8Array>);
}

/**
 * The request's bytes, held until they match its `Upload-Checksum` (tus checksum extension): a
 * mismatch answers 460 and none of them are written. Only sha256 is offered (Tus-Checksum-Algorithm).
 */
async function checkedBody(ctx: Context): Promise<Uint8Array> {
  const [algorithm, expected] = ctx.get('upload-checksum').split(' ');
  if (algorithm !== 'sha256') throw tusError('validation_failed', 400, 'Upload-Checksum: only sha256 is supported', ['Upload-Checksum']);
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of ctx.req) {
    length += (chunk as Buffer).length;
    if (length > CHECKSUM_MAX_CHUNK)
      throw tusError('validation_failed', 413, `a PATCH with Upload-Checksum may carry at most ${CHECKSUM_MAX_CHUNK} bytes`, ['Upload-Checksum']);
    chunks.push(chunk as Buffer);
  }
  const bytes = Buffer.concat(chunks);
  const actual = createHash('sha256').update(bytes).digest('base64');
  if (actual !== expected)
    throw tusError('validation_failed', 460, `Upload-Checksum: these bytes hash to ${actual}, not ${expected}; none were kept`, ['Upload-Checksum']);
  return bytes;
}

/** The tus server's refusals, as Error bodies naming the header at fault. */
function fromTus(status: number, text: string): AppError {
  switch (status) {
    case 409:
      return tusError('conflict', 409, `Upload-Offset: does not match the upload's offset; HEAD it and resume from there (${text})`, ['Upload-Offset']);
    case 410:
      return tusError('not_found', 410, `the upload is gone: ${text}`);
    case 423:
      return tusError('conflict', 423, `${text}; retry (HEAD it for the offset to resume from)`);
    case 413:
      return tusError('validation_failed', 413, `the bytes would pass the upload's length: ${text}`);
    case 404:
      return tusError('not_found', 404, 'upload not found');
    default:
      return tusError(status >= 500 ? 'internal' : 'validation_failed', status, `the upload refused the request: ${text}`);
  }
}

/** DELETE (tus termination): the upload ends `canceled`, its asset `error`, its bytes removed. */
export async function terminateUpload(deps: Pick<Deps, 'config' | 'db' | 'providers'>, actor: Actor, id: string, ctx: Context): Promise<void> {
  const upload = await ownUpload(deps, actor, id);
  if (upload.state === 'completed') throw conflict('the upload is completed: its bytes are the asset’s file now (delete the asset instead)');
  await abandonUpload(deps, id, 'canceled', { code: 'upload_canceled', message: 'the uploader terminated the upload' });
  ctx.set(TUS);
}
