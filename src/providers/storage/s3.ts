import aws4 from 'aws4';
import { request } from 'undici';
import type { ObjectStorage, StoredObject } from './types.ts';

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

  constructor(private readonly options: S3Options) {
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

  async delete(key: string): Promise<void> {
    const res = await this.send('DELETE', key);
    // Deleting what is already gone is success: deletes are retried after partial failures.
    if (res.statusCode === 404) return void (await res.body.dump());
    await this.expectOk(res, 'DELETE', key);
    await res.body.dump();
  }

  private send(method: 'GET' | 'PUT' | 'DELETE', key: string, body?: Buffer, headers: Record<string, string> = {}) {
    const base = this.endpoint.pathname.replace(/\/$/, '');
    const path = `${base}/${encodeURIComponent(this.options.bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
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
