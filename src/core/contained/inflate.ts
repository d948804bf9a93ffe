import { createInflate, createInflateRaw } from 'node:zlib';

/**
 * How many bytes a deflate stream (`raw`, or zlib-wrapped) really inflates to, counted while it
 * inflates and given up past `cap` (the answer is then `cap + 1`): headers that declare sizes can
 * lie, and the output is never held. A corrupt stream counts what it inflated before breaking
 * (whoever parses the file refuses it then).
 */
export function inflatedLength(compressed: Uint8Array, cap: number, raw = true): Promise<number> {
  return new Promise((resolve) => {
    const inflate = raw ? createInflateRaw() : createInflate();
    let length = 0;
    const done = () => {
      inflate.removeAllListeners('data');
      inflate.destroy();
      resolve(Math.min(length, cap + 1));
    };
    inflate.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > cap) done();
    });
    inflate.on('end', done);
    inflate.on('error', done);
    inflate.end(compressed);
  });
}
