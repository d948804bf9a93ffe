import { crc32, inflateSync } from 'node:zlib';
import { expect } from 'chai';
import { ReadFailure } from '../../src/core/read-failure.ts';
import { createGenerationProvider } from '../../src/providers/generation/index.ts';
import { SandboxGenerationProvider } from '../../src/providers/generation/sandbox.ts';
import type { GenerationKind, GenerationRequest } from '../../src/providers/generation/types.ts';

const request = (kind: GenerationKind, prompt: string, parameters: Record<string, unknown> = {}, signal = new AbortController().signal): GenerationRequest => ({
  kind,
  model: 'sandbox-model',
  prompt,
  parameters,
  signal,
  idempotencyKey: 'gen-1',
});
const generate = (kind: GenerationKind, prompt: string, parameters: Record<string, unknown> = {}) =>
  new SandboxGenerationProvider().generate(request(kind, prompt, parameters));

/** Every chunk of a PNG, each CRC checked. */
function pngChunks(bytes: Buffer): { type: string; data: Buffer }[] {
  expect([...bytes.subarray(0, 8)]).to.deep.equal([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const chunks: { type: string; data: Buffer }[] = [];
  for (let at = 8; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    const data = bytes.subarray(at + 8, at + 8 + length);
    expect(bytes.readUInt32BE(at + 8 + length), `CRC of ${type}`).to.equal(crc32(bytes.subarray(at + 4, at + 8 + length)));
    chunks.push({ type, data });
    at += 12 + length;
  }
  return chunks;
}

/** A GIF's size and frames, each frame's pixels decoded with a textbook LZW decoder. */
function parseGif(bytes: Buffer): { width: number; height: number; frames: number[][]; loops: boolean } {
  expect(bytes.toString('latin1', 0, 6)).to.equal('GIF89a');
  const width = bytes.readUInt16LE(6);
  const height = bytes.readUInt16LE(8);
  const packed = bytes[10]!;
  let at = 13 + (packed & 0x80 ? 3 * 2 ** ((packed & 7) + 1) : 0);
  const frames: number[][] = [];
  let loops = false;
  const blocks = () => {
    const parts: Buffer[] = [];
    for (let size = bytes[at++]!; size > 0; size = bytes[at++]!) {
      parts.push(bytes.subarray(at, at + size));
      at += size;
    }
    return Buffer.concat(parts);
  };
  for (;;) {
    const introducer = bytes[at++];
    if (introducer === 0x3b) break;
    if (introducer === 0x21) {
      const label = bytes[at++];
      const data = blocks();
      if (label === 0xff && data.toString('latin1', 0, 11) === 'NETSCAPE2.0') loops = true;
    } else if (introducer === 0x2c) {
      const frameWidth = bytes.readUInt16LE(at + 4);
      const frameHeight = bytes.readUInt16LE(at + 6);
      at += 9;
      const minCodeSize = bytes[at++]!;
      frames.push(lzwDecode(blocks(), minCodeSize).slice(0, frameWidth * frameHeight));
      expect(frames.at(-1)).to.have.length(frameWidth * frameHeight);
    } else expect.fail(`unexpected GIF block 0x${introducer?.toString(16)}`);
  }
  return { width, height, frames, loops };
}

function lzwDecode(data: Buffer, minCodeSize: number): number[] {
  const clear = 1 << minCodeSize;
  let size = minCodeSize + 1;
  let table: number[][] = [];
  let previous: number[] | null = null;
  const reset = () => {
    table = Array.from({ length: clear + 2 }, (_, i) => [i]);
    size = minCodeSize + 1;
    previous = null;
  };
  reset();
  const out: number[] = [];
  for (let bit = 0; bit + size <= data.length * 8; ) {
    let code = 0;
    for (let i = 0; i < size; i++, bit++) code |= ((data[bit >> 3]! >> (bit & 7)) & 1) << i;
    if (code === clear) {
      reset();
      continue;
    }
    if (code === clear + 1) break;
    const prior: number[] | null = previous;
    const entry: number[] = code < table.length ? table[code]! : prior && code === table.length ? [...prior, prior[0]!] : expect.fail(`bad LZW code ${code}`);
    out.push(...entry);
    if (prior) {
      table.push([...prior, entry[0]!]);
      if (table.length === 1 << size && size < 12) size++;
    }
    previous = entry;
  }
  return out;
}

describe('providers: sandbox generation', () => {
  it('makes a real PNG: signature, IHDR size, valid CRCs, IDAT inflating to the raw rows', async () => {
    const result = await generate('image', 'a red fox at dawn', { width: 100, height: 40 });
    expect(result.sandbox).to.equal(true);
    expect(result.usage).to.deep.equal({ units: 1, unit: 'image' });
    const [file] = result.files;
    expect(file).to.include({ contentType: 'image/png', extension: 'png', width: 100, height: 40 });
    const chunks = pngChunks(file!.bytes);
    expect(chunks.map((c) => c.type)).to.deep.equal(['IHDR', 'IDAT', 'IEND']);
    const header = chunks[0]!.data;
    expect([header.readUInt32BE(0), header.readUInt32BE(4), header[8], header[9]]).to.deep.equal([100, 40, 8, 2]);
    expect(inflateSync(chunks[1]!.data)).to.have.length(40 * (1 + 100 * 3));
  });

  it('defaults the image to 64×64 and clamps its size to 16–512', async () => {
    const sizeOf = async (parameters: Record<string, unknown>) => {
      const header = pngChunks((await generate('image', 'x', parameters)).files[0]!.bytes)[0]!.data;
      return [header.readUInt32BE(0), header.readUInt32BE(4)];
    };
    expect(await sizeOf({})).to.deep.equal([64, 64]);
    expect(await sizeOf({ width: 4000, height: 2 })).to.deep.equal([512, 16]);
    expect(await sizeOf({ width: 'wide' })).to.deep.equal([64, 64]);
  });

  it('makes a real WAV: RIFF/WAVE, a PCM fmt chunk at 8 kHz mono 16-bit, and consistent sizes', async () => {
    const result = await generate('audio', 'a calm melody', { duration_seconds: 3 });
    const { bytes, contentType, durationMs } = result.files[0]!;
    expect({ contentType, durationMs }).to.deep.equal({ contentType: 'audio/wav', durationMs: 3000 });
    expect(result.usage).to.deep.equal({ units: 3, unit: 'seconds' });
    expect(bytes.toString('latin1', 0, 4)).to.equal('RIFF');
    expect(bytes.readUInt32LE(4)).to.equal(bytes.length - 8);
    expect(bytes.toString('latin1', 8, 16)).to.equal('WAVEfmt ');
    expect(bytes.readUInt32LE(16)).to.equal(16);
    const [format, channels, rate, byteRate, align, bits] = [
      bytes.readUInt16LE(20),
      bytes.readUInt16LE(22),
      bytes.readUInt32LE(24),
      bytes.readUInt32LE(28),
      bytes.readUInt16LE(32),
      bytes.readUInt16LE(34),
    ];
    expect({ format, channels, rate, byteRate, align, bits }).to.deep.equal({ format: 1, channels: 1, rate: 8000, byteRate: 16000, align: 2, bits: 16 });
    expect(bytes.toString('latin1', 36, 40)).to.equal('data');
    expect(bytes.readUInt32LE(40))
      .to.equal(3 * 8000 * 2)
      .and.equal(bytes.length - 44);
    // A tone, not silence.
    expect(Math.max(...Array.from({ length: 2000 }, (_, i) => Math.abs(bytes.readInt16LE(44 + 2 * (1000 + i)))))).to.be.above(5000);
  });

  it('defaults audio to 2 s and clamps it to 1–10 s', async () => {
    expect((await generate('audio', 'x')).files[0]!.durationMs).to.equal(2000);
    expect((await generate('audio', 'x', { duration_seconds: 60 })).usage.units).to.equal(10);
  });

  it('writes plausible UTF-8 text beginning with the sandbox marker, counted in characters', async () => {
    const result = await generate('text', 'a haiku about café mornings');
    const file = result.files[0]!;
    const text = file.bytes.toString('utf8');
    expect(file).to.include({ contentType: 'text/plain; charset=utf-8', extension: 'txt' });
    expect(text.startsWith('[sandbox generation]')).to.equal(true);
    expect(text).to.contain('café mornings');
    expect(result.usage).to.deep.equal({ units: [...text].length, unit: 'characters' });
  });

  it('stands in for video with a looping animated GIF that decodes frame by frame', async () => {
    const result = await generate('video', 'waves on a beach', { width: 40, height: 30, frames: 5 });
    const file = result.files[0]!;
    expect(file).to.include({ contentType: 'image/gif', extension: 'gif', width: 40, height: 30, durationMs: 500 });
    expect(result.usage).to.deep.equal({ units: 5, unit: 'frames' });
    const gif = parseGif(file.bytes);
    expect([gif.width, gif.height, gif.frames.length, gif.loops]).to.deep.equal([40, 30, 5, true]);
    expect(gif.frames[0]).to.not.deep.equal(gif.frames[1]); // it moves
  });

  it('gives identical bytes for the same input (whatever the parameter order) and different bytes for another prompt', async () => {
    for (const kind of ['image', 'audio', 'video', 'text'] as const) {
      const a = await generate(kind, 'a lighthouse', { width: 32, height: 48 });
      const b = await generate(kind, 'a lighthouse', { height: 48, width: 32 });
      const c = await generate(kind, 'a windmill', { width: 32, height: 48 });
      expect(a.files[0]!.bytes.equals(b.files[0]!.bytes), kind).to.equal(true);
      expect(a.files[0]!.bytes.equals(c.files[0]!.bytes), kind).to.equal(false);
    }
  });

  it('reports progress, and stops with the abort reason when canceled mid-run', async () => {
    const provider = new SandboxGenerationProvider({ delayMs: 400 });
    const progress: number[] = [];
    await provider.generate({ ...request('image', 'x'), onProgress: (p) => progress.push(p) });
    expect(progress).to.deep.equal([0, 0.25, 0.5, 0.75, 1]);
    const controller = new AbortController();
    const reason = new Error('canceled by user');
    setTimeout(() => controller.abort(reason), 50);
    const started = Date.now();
    const error = await provider.generate(request('video', 'x', {}, controller.signal)).catch((e: unknown) => e);
    expect(error).to.equal(reason);
    expect(Date.now() - started).to.be.below(300);
  });

  it('fails on "sandbox-fail" and times out on "sandbox-timeout" once aborted', async () => {
    const failed = await generate('image', 'sandbox-fail').catch((e: unknown) => e);
    expect(failed).to.be.instanceOf(ReadFailure).with.property('kind', 'failed');
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('job timeout')), 50);
    const timedOut = await new SandboxGenerationProvider().generate(request('text', 'sandbox-timeout', {}, controller.signal)).catch((e: unknown) => e);
    expect(timedOut).to.be.instanceOf(ReadFailure).with.property('kind', 'timeout');
  });

  it('is what createGenerationProvider builds without a service URL', () => {
    expect(createGenerationProvider({}).name).to.equal('sandbox');
    expect(createGenerationProvider({ openaiUrl: 'http://127.0.0.1:1' }).name).to.equal('openai');
    expect(createGenerationProvider({ openaiUrl: 'http://127.0.0.1:1', predictionUrl: 'http://127.0.0.1:2' }).name).to.equal('prediction');
  });
});
