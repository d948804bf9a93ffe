import aws4 from 'aws4';
import { createServer, type IncomingMessage, type Server } from 'node:http';

export const FAKE_S3_CREDENTIALS = { accessKeyId: 'AKIAFAKETEST', secretAccessKey: 'fake-secret-key-for-tests' };

export interface FakeS3 {
  endpoint: string;
  bucket: string;
  /** `key → {body, contentType}` as stored. */
  objects: Map<string, { body: Buffer; contentType: string }>;
  /** Every request as `METHOD /path`, with whether its signature checked out. */
  requests: { method: string; path: string; signed: boolean }[];
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A path-style S3 endpoint on loopback. It re-computes each request's SigV4 signature with the
 * known secret and answers 403 when it does not match, as S3 does.
 */
export async function startFakeS3(bucket = 'test-bucket'): Promise<FakeS3> {
  const objects = new Map<string, { body: Buffer; contentType: string }>();
  const requests: FakeS3['requests'] = [];
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const path = req.url!;
    const authorization = req.headers.authorization ?? '';
    const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
    const headers: Record<string, string> = {};
    for (const name of signedHeaders) if (name !== 'host') headers[name] = String(req.headers[name] ?? '');
    const expected = aws4.sign(
      { host: req.headers.host, path, method: req.method, service: 's3', region: 'us-east-1', headers, ...(body.length && { body }) },
      FAKE_S3_CREDENTIALS,
    );
    const signed = authorization !== '' && (expected.headers as Record<string, string>).Authorization === authorization;
    requests.push({ method: req.method!, path, signed });
    if (!signed) {
      res.writeHead(403, { 'content-type': 'application/xml' }).end('<Error><Code>SignatureDoesNotMatch</Code></Error>');
      return;
    }
    const prefix = `/${bucket}/`;
    if (!path.startsWith(prefix)) return void res.writeHead(404).end('<Error><Code>NoSuchBucket</Code></Error>');
    const key = decodeURIComponent(path.slice(prefix.length));
    if (req.method === 'PUT') {
      objects.set(key, { body, contentType: String(req.headers['content-type']) });
      return void res.writeHead(200, { etag: '"fake"' }).end();
    }
    const object = objects.get(key);
    if (req.method === 'GET') {
      if (!object) return void res.writeHead(404, { 'content-type': 'application/xml' }).end('<Error><Code>NoSuchKey</Code></Error>');
      return void res.writeHead(200, { 'content-type': object.contentType, 'content-length': object.body.length }).end(object.body);
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
  return { endpoint: `http://127.0.0.1:${port}`, bucket, objects, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
