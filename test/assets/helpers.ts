import { expect } from 'chai';
import { deflateSync, crc32 } from 'node:zlib';

import { assetFields } from '../support/shapes.ts';

export { assetFields };

export function expectAssetShape(asset: Record<string, unknown>): void {
  expect(Object.keys(asset).sort()).to.deep.equal(assetFields);
  expect(asset.id).to.match(/^[0-9a-f-]{36}$/);
  expect(new Date(asset.created_at as string).toISOString()).to.equal(asset.created_at);
  expect(new Date(asset.updated_at as string).toISOString()).to.equal(asset.updated_at);
}

/** A real PNG (RGB, filter 0 rows) of the given size, built by hand so the test owns its bytes. */
export function png(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.writeUInt8(8, 8); // bit depth
  header.writeUInt8(2, 9); // colour type: RGB
  const rows = Buffer.concat(Array.from({ length: height }, () => Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x7f)])));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A 1×1 PNG whose header claims `width`×`height` pixels (IHDR rewritten, its CRC recomputed): what
 * a decompression bomb looks like to anything that reads the header only.
 */
export function pngClaiming(width: number, height: number): Buffer {
  const bytes = png(1, 1);
  // Signature (8), IHDR length (4) and type (4), then width and height; the CRC covers type and data.
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  bytes.writeUInt32BE(crc32(bytes.subarray(12, 29)), 29);
  return bytes;
}
