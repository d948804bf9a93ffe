import type { Readable } from 'node:stream';

export interface StoredObject {
  key: string;
  size: number;
  contentType: string;
}

/** Object storage for files users upload or import (logos, imported assets). */
export interface ObjectStorage {
  readonly name: 'local' | 's3';
  put(key: string, body: Buffer, contentType: string): Promise<StoredObject>;
  get(key: string): Promise<{ body: Buffer; contentType: string } | null>;
  delete(key: string): Promise<void>;
  /**
   * Streams the object, or the inclusive byte `range` of it (never the whole file into memory);
   * `size` is the whole object's. Null when there is no such object.
   */
  open(key: string, range?: ByteRange): Promise<OpenedObject | null>;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface OpenedObject {
  body: Readable;
  size: number;
  contentType: string;
}
