import type { Context } from 'koa';
import { AppError, notFound } from '../../core/errors.ts';
import type { Deps } from '../../platform/deps.ts';
import type { ByteRange } from '../../providers/storage/index.ts';
import { assetFileKey, type AssetRow } from '../presenter.ts';

export type Disposition = 'inline' | 'attachment';

// Media browsers render harmlessly inline; anything else is offered as a download.
const inlineSafe = /^(image\/(png|jpeg|gif|webp|avif)|video\/[\w.+-]+|audio\/[\w.+-]+|text\/plain)$/;
// What a browser could execute from our origin (HTML, SVG, XML and script): always a download, whatever was asked.
const executable = /(html|svg|xml|javascript|ecmascript)/i;

/** The disposition a file is served with: `inline` only for types that cannot run in a browser. */
export function dispositionFor(contentType: string, asked: Disposition = 'inline'): Disposition {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return asked === 'inline' && inlineSafe.test(type) && !executable.test(type) ? 'inline' : 'attachment';
}

/** `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266), the name reduced to safe ASCII for old clients. */
export function contentDisposition(disposition: Disposition, filename: string | null): string {
  if (!filename) return disposition;
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * The validator of the stored bytes: their SHA-256 (an upload's, or what enrichment measured) as a
 * strong ETag; without one, a weak one from the row's last change.
 */
async function etagOf(deps: Pick<Deps, 'db'>, asset: AssetRow): Promise<string> {
  const upload = await deps.db('asset_uploads').where({ asset_id: asset.id, state: 'completed' }).first('sha256');
  const sha256 = (upload?.sha256 as string | undefined) ?? asset.enrichment?.checksum?.value;
  return sha256 ? `"${sha256}"` : `W/"${asset.updated_at.getTime().toString(36)}"`;
}

const matches = (header: string, etag: string) => {
  const weak = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.trim() === '*' || header.split(',').some((tag) => weak(tag) === weak(etag));
};

/**
 * The one range to serve for a `Range` header (RFC 9110 §14.1–14.2), or null to serve the whole file:
 * a header that is not a valid `bytes=` range-set is ignored, a set of which no range is satisfiable
 * is `unsatisfiable` (416), and a set with several satisfiable ranges is served whole (a server may
 * ignore Range; we send no multipart/byteranges).
 */
export function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' | null {
  const match = /^\s*bytes\s*=\s*(.*)$/i.exec(header);
  if (!match || size === 0) return null; // nothing of an empty file can be a partial representation
  const specs = match[1]!.split(',').map((spec) => spec.trim());
  const ranges: ByteRange[] = [];
  for (const spec of specs) {
    if (spec === '') continue; // 1#range-spec tolerates empty list elements
    const parts = /^(\d*)-(\d*)$/.exec(spec);
    if (!parts || (parts[1] === '' && parts[2] === '')) return null;
    const [, first, last] = parts as unknown as [string, string, string];
    if (first === '') {
      const suffix = Number(last);
      if (suffix > 0) ranges.push({ start: Math.max(0, size - suffix), end: size - 1 });
      continue;
    }
    const start = Number(first);
    if (last !== '' && Number(last) < start) return null; // an invalid range-spec: the whole header is invalid
    if (start < size) ranges.push({ start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) });
  }
  if (ranges.length === 0) return specs.some((spec) => spec !== '') ? 'unsatisfiable' : null;
  return ranges.length === 1 ? ranges[0]! : null;
}

/**
 * Streams an asset's stored file: Range (206 for one satisfiable range, 416 for none, the whole file otherwise), ETag and If-None-Match (304), If-Range;
 * always `nosniff` and a sandboxing CSP, and a download unless the type is safe inline.
 */
export async function sendAssetFile(deps: Pick<Deps, 'db' | 'providers'>, asset: AssetRow, ctx: Context, asked: Disposition = 'inline'): Promise<void> {
  if (asset.upload_file_state !== 'success') throw notFound('asset file');
  const key = assetFileKey(asset.organization_id, asset.id);
  const etag = await etagOf(deps, asset);
  ctx.set({
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "sandbox; default-src 'none'",
    'Cache-Control': 'private, max-age=300',
    'Accept-Ranges': 'bytes',
    ETag: etag,
  });
  const ifNoneMatch = ctx.get('if-none-match');
  if (ifNoneMatch && matches(ifNoneMatch, etag)) {
    ctx.status = 304;
    return;
  }
  const head = await deps.providers.storage.open(key, { start: 0, end: 0 });
  if (!head) throw notFound('asset file');
  head.body.on('error', () => undefined).destroy();
  const { size, contentType } = head;
  const rangeHeader = ctx.get('range');
  const ifRange = ctx.get('if-range');
  // A Range with an If-Range that no longer matches gets the whole, current file.
  const range = rangeHeader && (!ifRange || ifRange === etag) ? parseRange(rangeHeader, size) : null;
  if (range === 'unsatisfiable') {
    throw new AppError(
      'validation_failed',
      `Range: ${rangeHeader} is outside the file (${size} bytes)`,
      [{ path: ['Range'], message: `the file has ${size} bytes` }],
      {
        status: 416,
        headers: { 'Content-Range': `bytes */${size}` },
      },
    );
  }
  const file = size === 0 ? await deps.providers.storage.open(key) : await deps.providers.storage.open(key, range ?? { start: 0, end: size - 1 });
  if (!file) throw notFound('asset file');
  ctx.set('Content-Disposition', contentDisposition(dispositionFor(contentType, asked), asset.title));
  ctx.type = contentType;
  if (range) {
    ctx.status = 206;
    ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
    ctx.length = range.end - range.start + 1;
  } else {
    ctx.status = 200;
    ctx.length = size;
  }
  ctx.body = file.body;
}
