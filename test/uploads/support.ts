import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import * as tus from 'tus-js-client';
import { assetFileKey } from '../../src/assets/presenter.ts';
import type { Config } from '../../src/config/schema.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { startTestServer, type TestServer, type TestUser } from '../support/server.ts';

export interface UploadStack {
  server: TestServer;
  worker: WorkerProcess;
  db: Db;
  config: Config;
  databaseUrl: string;
  /** Another web process on the same database and files (its own upload store, locks and measurements); stopped with the stack. */
  anotherServer(): Promise<TestServer>;
  stop(): Promise<void>;
}

/** Web process, worker and database of their own, with the given configuration. */
export async function startUploadStack(overrides: Record<string, string> = {}): Promise<UploadStack> {
  const databaseUrl = await isolatedDatabase();
  const db = createDb(databaseUrl, { max: 2 });
  const server = await startTestServer(overrides, { databaseUrl });
  const config = testConfig(overrides);
  const worker = await startWorker(config, databaseUrl, createLogger(config, 'test-worker'));
  const others: TestServer[] = [];
  return {
    server,
    worker,
    db,
    config,
    databaseUrl,
    async anotherServer() {
      const other = await startTestServer(overrides, { databaseUrl });
      others.push(other);
      return other;
    },
    async stop() {
      for (const other of others) await other.stop();
      await worker.stop();
      await server.stop();
      await db.destroy();
    },
  };
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Deterministic pseudo-random bytes (incompressible, no accidental signature). */
export function noise(length: number, seed = 7): Buffer {
  const bytes = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    bytes[i] = x >> 16;
  }
  return bytes;
}

/** Sends `bytes` to an existing upload URL with the real tus client; resolves when it reports success. */
export function tusSend(uploadUrl: string, token: string, bytes: Buffer, options: { chunkSize?: number } = {}): Promise<{ chunks: number }> {
  let chunks = 0;
  return new Promise((resolve, reject) => {
    const upload = new tus.Upload(bytes, {
      uploadUrl,
      headers: { authorization: `Bearer ${token}` },
      chunkSize: options.chunkSize ?? Number.POSITIVE_INFINITY,
      retryDelays: null,
      storeFingerprintForResuming: false,
      onChunkComplete: () => {
        chunks++;
      },
      onSuccess: () => resolve({ chunks }),
      onError: reject,
    });
    upload.start();
  });
}

/** The status tus-js-client saw when it failed (its DetailedError carries the response). */
export function failedStatus(error: unknown): { status: number; body: any } {
  const response = (error as { originalResponse?: { getStatus(): number; getBody(): string } }).originalResponse;
  expect(response, `tus failed without a response: ${String(error)}`).to.not.equal(undefined);
  const body = response!.getBody();
  return { status: response!.getStatus(), body: body ? JSON.parse(body) : undefined };
}

/**
 * A PATCH that sends `sent` of its `declared` bytes and then kills the connection: what a dropped
 * network does half-way through a request.
 */
export function patchAndKill(uploadUrl: string, token: string, offset: number, bytes: Buffer, sent: number): Promise<void> {
  return new Promise((resolve) => {
    const req = tusPatchRequest(uploadUrl, token, offset, bytes.length);
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(bytes.subarray(0, sent), () => {
      // Let the bytes reach the server before the connection drops.
      setTimeout(() => req.destroy(), 200);
    });
  });
}

/** A raw tus request (HEAD, PATCH, DELETE) with the bearer token. */
export async function tusRequest(uploadUrl: string, method: string, token: string, headers: Record<string, string> = {}, body?: Buffer) {
  const res = await fetch(uploadUrl, {
    method,
    headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0', ...headers },
    ...(body && { body }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** The same upload, as another web process serves it. */
export const uploadUrlOn = (server: TestServer, uploadUrl: string) => `${server.url}${new URL(uploadUrl).pathname}`;

/** One raw PATCH of `bytes` at `offset`. */
export const patchBytes = (uploadUrl: string, token: string, offset: number, bytes: Buffer) =>
  tusRequest(uploadUrl, 'PATCH', token, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, bytes);

export async function createUploadFor(server: TestServer, user: TestUser, body: Record<string, unknown>) {
  return server.request('post', '/assets/uploads', { token: user.token, body });
}

/** Where the local stores keep an upload's bytes and the asset's file. */
export const stagedFiles = (config: Config, uploadId: string) => [
  path.join(config.DATA_DIR, 'uploads', uploadId),
  path.join(config.DATA_DIR, 'uploads', `${uploadId}.json`),
];
export const storedFile = (config: Config, organizationId: string, assetId: string) =>
  path.join(config.DATA_DIR, 'storage', assetFileKey(organizationId, assetId));

export function expectNoStagedBytes(config: Config, uploadId: string): void {
  for (const file of stagedFiles(config, uploadId)) expect(existsSync(file), `${file} is left behind`).to.equal(false);
}

/** A raw tus PATCH of `length` bytes at `offset`, its body still to be written (the caller sends it in parts). */
export function tusPatchRequest(uploadUrl: string, token: string, offset: number, length: number) {
  const url = new URL(uploadUrl);
  return httpRequest({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'PATCH',
    headers: {
      authorization: `Bearer ${token}`,
      'tus-resumable': '1.0.0',
      'upload-offset': String(offset),
      'content-type': 'application/offset+octet-stream',
      'content-length': String(length),
    },
  });
}
