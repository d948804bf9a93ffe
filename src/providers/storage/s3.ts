import aws4 from 'aws4';
import { request } from 'undici';
import type { Readable } from 'node:stream';
import type { ByteRange, ObjectStorage, OpenedObject, StoredObject } from './types.ts';

export interface S3Options {
  /** e.g. `https://s3.eu-central-1.amazonaws.com` or a MinIO/R2 endpoint. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * Any S3-compatible object store, signed with SigV4 (aws4) and spoken to through undici.
 * Path-style URLs (`endpoint/bucket/key`) work with MinIO, R2 and AWS alike.
 */
export class S3Storage implements ObjectStorage {
  readonly name = 's3';
  private readonly endpoint: URL;

  private readonly options: S3Options;
  constructor(options: S3Options) {
    this.options = options;
    this.endpoint = new URL(options.endpoint);
  }

  async put(key: string, body: Buffer, contentType: string): Promise<StoredObject> {
    const res = await this.send('PUT', key, body, { 'Content-Type': contentType, 'Content-Length': String(body.length) });
    await this.expectOk(res, 'PUT', key);
    return { key, size: body.length, contentType };
  }

  async get(key: string): Promise<{ body: Buffer; contentType: string } | null> {
    const res = await this.send('GET', key);
    if (res.statusCode === 404) {
      await res.body.dump();
      return null;
    }
    await this.expectOk(res, 'GET', key);
    const contentType = String(res.headers['content-type'] ?? 'application/octet-stream');
    return { body: Buffer.from(await res.body.arrayBuffer()), contentType };
  }

  async open(key: string, range?: ByteRange): Promise<OpenedObject | null> {
    const res = await this.send('GET', key, undefined, range ? { Range: `bytes=${range.start}-${range.end}` } : {});
    if (res.statusCode === 404) {
      await res.body.dump();
      return null;
    }
    // S3 refuses any range of an empty object (416): open it whole, which is nothing.
    if (res.statusCode === 416 && range) {
      await res.body.dump();
      return this.open(key);
    }
    await this.expectOk(res, 'GET', key);
    const contentType = String(res.headers['content-type'] ?? 'application/octet-stream');
    // A ranged answer names the whole size after the slash of Content-Range; a whole one in Content-Length.
    const total = /\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''))?.[1] ?? res.headers['content-length'];
    return { body: res.body as Readable, size: Number(total), contentType };
  }

  /** Server-side copy within the bucket (a finished upload becomes the asset's file without passing through us). */
  async copyObject(sourceKey: string, key: string, contentType: string): Promise<StoredObject> {
    const res = await this.send('PUT', key, undefined, {
      'x-amz-copy-source': `/${this.options.bucket}/${this.encodeKey(sourceKey)}`,
      'x-amz-metadata-directive': 'REPLACE',
      'Content-Type': contentType,
    });
    await this.expectOk(res, 'PUT (copy)', key);
    await res.body.dump();
    const opened = await this.open(key, { start: 0, end: 0 });
    opened?.body.on('error', () => undefined).destroy();
    return { key, size: opened?.size ?? 0, contentType };
  }

  /**
   * A presigned GET (SigV4 in the query string) valid for `expiresInSeconds`; S3 answers it with
   * the given Content-Disposition and Content-Type (response-* parameters, covered by the signature).
   */
  presignGet(key: string, options: { expiresInSeconds: number; contentDisposition: string; contentType: string }): string {
    const query = new URLSearchParams({
      'X-Amz-Expires': String(options.expiresInSeconds),
      'response-content-disposition': options.contentDisposition,
      'response-content-type': options.contentType,
    });
    const signed = aws4.sign(
      { host: this.endpoint.host, path: `${this.pathOf(key)}?${query}`, method: 'GET', service: 's3', region: this.options.region, signQuery: true },
      { accessKeyId: this.options.accessKeyId, secretAccessKey: this.options.secretAccessKey },
    );
    return new URL(signed.path!, this.endpoint).toString();
  }

  async delete(key: string): Promise<void> {
    const res = await this.send('DELETE', key);
    // Deleting what is already gone is success: deletes are retried after partial failures.
    if (res.statusCode === 404) return void (await res.body.dump());
    await this.expectOk(res, 'DELETE', key);
    await res.body.dump();
  }

  private encodeKey(key: string): string {
    return key.split('/').map(encodeURIComponent).join('/');
  }

  private pathOf(key: string): string {
    const base = this.endpoint.pathname.replace(/\/$/, '');
    return `${base}/${encodeURIComponent(this.options.bucket)}/${this.encodeKey(key)}`;
  }

  private send(method: 'GET' | 'PUT' | 'DELETE', key: string, body?: Buffer, headers: Record<string, string> = {}) {
    const path = this.pathOf(key);
    const signed = aws4.sign(
      { host: this.endpoint.host, path, method, service: 's3', region: this.options.region, headers, ...(body && { body }) },
      { accessKeyId: this.options.accessKeyId, secretAccessKey: this.options.secretAccessKey },
    );
    return request(new URL(path, this.endpoint), {
      method,
      headers: signed.headers as Record<string, string>,
      ...(body && { body }),
      headersTimeout: 30_000,
      bodyTimeout: 60_000,
    });
  }

  private async expectOk(res: Awaited<ReturnType<typeof request>>, method: string, key: string): Promise<void> {
    if (res.statusCode >= 200 && res.statusCode < 300) return;
    const detail = (await res.body.text()).slice(0, 300);
    throw new Error(`object storage ${method} ${key} failed with HTTP ${res.statusCode}: ${detail}`);
  }
}
