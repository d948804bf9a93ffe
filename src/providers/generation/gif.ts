/**
 * An animated GIF89a with a 256-colour global palette, looping forever. The LZW stream is the
 * trivial valid one: every pixel is sent as a literal 9-bit code and a clear code comes before the
 * code table could grow past 9 bits, so no dictionary is needed to write it. Bigger than real
 * LZW (about 9/8 of a byte a pixel), which is fine for the small sandbox stand-in.
 */
export interface GifAnimation {
  width: number;
  height: number;
  /** 256 RGB triples. */
  palette: Uint8Array;
  /** Palette indices, `width × height` each. */
  frames: Uint8Array[];
  /** Per frame, in hundredths of a second. */
  delayCs: number;
}

const minCodeSize = 8;
const clearCode = 1 << minCodeSize;
const endCode = clearCode + 1;
/** Literals between clear codes: after clear the table holds 258 codes, each literal after the first adds one; 9 bits last to 511. */
const literalsPerClear = 250;

export function encodeGif(animation: GifAnimation): Buffer {
  const { width, height, palette, frames } = animation;
  if (palette.length !== 256 * 3) throw new RangeError('the palette must hold 256 RGB triples');
  const parts: Buffer[] = [Buffer.from('GIF89a', 'latin1')];
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(width, 0);
  screen.writeUInt16LE(height, 2);
  screen[4] = 0xf7; // global colour table, 8 bits of colour resolution, 2^(7+1) entries
  parts.push(screen, Buffer.from(palette));
  // NETSCAPE2.0 application extension: loop count 0 = forever.
  parts.push(Buffer.from([0x21, 0xff, 0x0b, ...Buffer.from('NETSCAPE2.0', 'latin1'), 0x03, 0x01, 0x00, 0x00, 0x00]));
  for (const frame of frames) {
    if (frame.length !== width * height) throw new RangeError(`a frame must hold ${width * height} pixels`);
    // Graphic control extension: disposal 1 (leave in place), the frame delay, no transparency.
    const control = Buffer.from([0x21, 0xf9, 0x04, 0x04, 0, 0, 0, 0x00]);
    control.writeUInt16LE(animation.delayCs, 4);
    const descriptor = Buffer.alloc(10);
    descriptor[0] = 0x2c;
    descriptor.writeUInt16LE(width, 5);
    descriptor.writeUInt16LE(height, 7);
    parts.push(control, descriptor, Buffer.from([minCodeSize]), subBlocks(literalCodes(frame)));
  }
  parts.push(Buffer.from([0x3b]));
  return Buffer.concat(parts);
}

/** The pixels as 9-bit codes, least significant bit first, as GIF packs them. */
function literalCodes(pixels: Uint8Array): Buffer {
  const out: number[] = [];
  let bits = 0;
  let count = 0;
  const put = (code: number) => {
    bits |= code << count;
    count += minCodeSize + 1;
    while (count >= 8) {
      out.push(bits & 0xff);
      bits >>>= 8;
      count -= 8;
    }
  };
  for (let i = 0; i < pixels.length; i++) {
    if (i % literalsPerClear === 0) put(clearCode);
    put(pixels[i]!);
  }
  put(endCode);
  if (count > 0) out.push(bits & 0xff);
  return Buffer.from(out);
}

/** Data sub-blocks of at most 255 bytes, each led by its length, ended by an empty block. */
function subBlocks(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < data.length; at += 255) {
    const piece = data.subarray(at, at + 255);
    parts.push(Buffer.from([piece.length]), piece);
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}
