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
}
