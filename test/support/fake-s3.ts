import aws4 from 'aws4';
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export const FAKE_S3_CREDENTIALS = { accessKeyId: 'AKIAFAKETEST', secretAccessKey: 'fake-secret-key-for-tests' };

interface StoredObject {
  body: Buffer;
  contentType: string;
  /** `x-amz-meta-*` headers as stored (lower-case names, without the prefix). */
  metadata?: Record<string, string>;
}

export interface FakeS3 {
  endpoint: string;
  bucket: string;
  /** `key → {body, contentType}` as stored. */
  objects: Map<string, StoredObject>;
  /** Multipart uploads in progress, by upload id. */
  multipartUploads: Map<string, { key: string; parts: Map<number, Buffer> }>;
  /** Every request as `METHOD /path`, with whether its signature checked out (header or presigned query). */
  requests: { method: string; path: string; signed: boolean }[];
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const xml = (res: ServerResponse, status: number, body: string) =>
  void res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?>${body}`);
const s3Error = (res: ServerResponse, status: number, code: string) => xml(res, status, `<Error><Code>${code}</Code></Error>`);
const withMetadata = (metadata: Record<string, string>) => (Object.keys(metadata).length ? { metadata } : {});
const etagOf = (body: Buffer) => `"${createHash('md5').update(body).digest('hex')}"`;

/** Whether a request carries a valid SigV4 signature in its Authorization header. */
function headerSigned(req: IncomingMessage, path: string, body: Buffer): boolean {
  const authorization = req.headers.authorization ?? '';
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) if (name !== 'host') headers[name] = String(req.headers[name] ?? '');
  const expected = aws4.sign(
    { host: req.headers.host, path, method: req.method, service: 's3', region: 'us-east-1', headers, ...(body.length && { body }) },
    FAKE_S3_CREDENTIALS,
  );
  return authorization !== '' && (expected.headers as Record<string, string>).Authorization === authorization;
}

/** A presigned URL (SigV4 in the query): the signature re-computed over the rest, and its expiry checked. */
function querySigned(req: IncomingMessage, url: URL): 'valid' | 'invalid' | 'expired' {
  const signature = url.searchParams.get('X-Amz-Signature');
  if (!signature) return 'invalid';
  const rest = new URLSearchParams(url.searchParams);
  rest.delete('X-Amz-Signature');
  const expected = aws4.sign(
    { host: req.headers.host, path: `${url.pathname}?${rest}`, method: req.method, service: 's3', region: 'us-east-1', signQuery: true },
    FAKE_S3_CREDENTIALS,
  );
  if (new URL(expected.path!, url).searchParams.get('X-Amz-Signature') !== signature) return 'invalid';
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(url.searchParams.get('X-Amz-Date') ?? '');
  if (!date) return 'invalid';
  const signedAt = Date.UTC(+date[1]!, +date[2]! - 1, +date[3]!, +date[4]!, +date[5]!, +date[6]!);
  return signedAt + Number(url.searchParams.get('X-Amz-Expires')) * 1000 < Date.now() ? 'expired' : 'valid';
}

/**
 * A path-style S3 endpoint on loopback. It re-computes each request's SigV4 signature with the
 * known secret and answers 403 when it does not match, as S3 does (presigned GETs too, with their
 * expiry). Objects (with metadata, ranges and server-side copies), multipart uploads (create,
 * upload part, list parts, complete, abort) and multi-object delete: what the tus S3 store uses.
 */
export async function startFakeS3(bucket = 'test-bucket'): Promise<FakeS3> {
  const objects = new Map<string, StoredObject>();
  const multipartUploads: FakeS3['multipartUploads'] = new Map();
  const requests: FakeS3['requests'] = [];
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const path = req.url!;
    const url = new URL(path, 'http://fake-s3');
    const presigned = url.searchParams.has('X-Amz-Signature');
    const verdict = presigned ? querySigned(req, url) : headerSigned(req, path, body) ? 'valid' : 'invalid';
    requests.push({ method: req.method!, path, signed: verdict === 'valid' });
    if (verdict === 'expired') return s3Error(res, 403, 'AccessDenied');
    if (verdict !== 'valid') return s3Error(res, 403, 'SignatureDoesNotMatch');
    const prefix = `/${bucket}`;
    if (url.pathname !== prefix && !url.pathname.startsWith(`${prefix}/`)) return void res.writeHead(404).end('<Error><Code>NoSuchBucket</Code></Error>');
    const key = decodeURIComponent(url.pathname.slice(prefix.length + 1));
    const query = url.searchParams;

    // Multi-object delete (POST /bucket?delete).
    if (req.method === 'POST' && query.has('delete')) {
      const keys = [...body.toString().matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
      for (const name of keys) objects.delete(name);
      return xml(res, 200, `<DeleteResult>${keys.map((k) => `<Deleted><Key>${k}</Key></Deleted>`).join('')}</DeleteResult>`);
    }
    // Multipart uploads.
    if (req.method === 'POST' && query.has('uploads')) {
      const uploadId = randomUUID();
      multipartUploads.set(uploadId, { key, parts: new Map() });
      return xml(
        res,
        200,
        `<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><UploadId>${uploadId}</UploadId></InitiateMultipartUploadResult>`,
      );
    }
    const uploadId = query.get('uploadId');
    if (uploadId) {
      const upload = multipartUploads.get(uploadId);
      if (!upload || upload.key !== key) return s3Error(res, 404, 'NoSuchUpload');
      if (req.method === 'PUT') {
        upload.parts.set(Number(query.get('partNumber')), body);
        return void res.writeHead(200, { etag: etagOf(body) }).end();
      }
      if (req.method === 'GET') {
        const parts = [...upload.parts.entries()].sort(([a], [b]) => a - b);
        const listed = parts.map(([n, part]) => `<Part><PartNumber>${n}</PartNumber><ETag>${etagOf(part)}</ETag><Size>${part.length}</Size></Part>`);
        return xml(
          res,
          200,
          `<ListPartsResult><Bucket>${bucket}</Bucket><Key>${key}</Key><UploadId>${uploadId}</UploadId><IsTruncated>false</IsTruncated>${listed.join('')}</ListPartsResult>`,
        );
      }
      if (req.method === 'POST') {
        const numbers = [...body.toString().matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
        const whole = Buffer.concat(numbers.map((n) => upload.parts.get(n) ?? Buffer.alloc(0)));
        objects.set(key, { body: whole, contentType: 'application/octet-stream' });
        multipartUploads.delete(uploadId);
        return xml(
          res,
          200,
          `<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><ETag>${etagOf(whole)}</ETag></CompleteMultipartUploadResult>`,
        );
      }
      if (req.method === 'DELETE') {
        multipartUploads.delete(uploadId);
        return void res.writeHead(204).end();
      }
    }
    if (req.method === 'PUT') {
      const metadata: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (name.startsWith('x-amz-meta-')) metadata[name.slice('x-amz-meta-'.length)] = String(value);
      const source = req.headers['x-amz-copy-source'];
      if (source) {
        const from = objects.get(decodeURIComponent(String(source)).replace(`/${bucket}/`, ''));
        if (!from) return s3Error(res, 404, 'NoSuchKey');
        objects.set(key, { body: from.body, contentType: String(req.headers['content-type'] ?? from.contentType), ...withMetadata(metadata) });
        return xml(res, 200, `<CopyObjectResult><ETag>${etagOf(from.body)}</ETag></CopyObjectResult>`);
      }
      objects.set(key, { body, contentType: String(req.headers['content-type']), ...withMetadata(metadata) });
      return void res.writeHead(200, { etag: etagOf(body) }).end();
    }
    const object = objects.get(key);
    if (req.method === 'GET' || req.method === 'HEAD') {
      if (!object) return req.method === 'HEAD' ? void res.writeHead(404).end() : s3Error(res, 404, 'NoSuchKey');
      const headers: Record<string, string | number> = {
        'content-type': query.get('response-content-type') ?? object.contentType,
        etag: etagOf(object.body),
        'accept-ranges': 'bytes',
      };
      if (query.get('response-content-disposition')) headers['content-disposition'] = query.get('response-content-disposition')!;
      for (const [name, value] of Object.entries(object.metadata ?? {})) headers[`x-amz-meta-${name}`] = value;
      const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
      if (range) {
        const start = Number(range[1]);
        const end = Math.min(range[2] ? Number(range[2]) : object.body.length - 1, object.body.length - 1);
        if (start >= object.body.length) return s3Error(res, 416, 'InvalidRange');
        const slice = object.body.subarray(start, end + 1);
        res.writeHead(206, { ...headers, 'content-length': slice.length, 'content-range': `bytes ${start}-${end}/${object.body.length}` });
        return void res.end(req.method === 'HEAD' ? undefined : slice);
      }
      res.writeHead(200, { ...headers, 'content-length': object.body.length });
      return void res.end(req.method === 'HEAD' ? undefined : object.body);
    }
    if (req.method === 'DELETE') {
      objects.delete(key);
      return void res.writeHead(204).end();
    }
    res.writeHead(405).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    objects,
    multipartUploads,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
