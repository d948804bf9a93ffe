import { createHash } from 'node:crypto';
import { random, stableJson } from '../sandbox-random.ts';
import { ReadFailure } from '../../core/read-failure.ts';
import { pause } from '../http-retry.ts';
import { encodeGif } from './gif.ts';
import { encodePng } from './png.ts';
import type { GeneratedFile, GenerationProvider, GenerationRequest, GenerationResult } from './types.ts';
import { encodeWav } from './wav.ts';

export interface SandboxGenerationOptions {
  /** An artificial run time, spread over a few progress steps, so tests and demos can watch progress and cancel mid-run. */
  delayMs?: number | undefined;
}

const sampleRate = 8000;
const scale = [262, 294, 330, 392, 440, 523, 587, 659]; // C major pentatonic-ish: pleasant whatever the order
const phrases = [
  'the light falls softly across the scene',
  'a quiet rhythm holds the parts together',
  'bold colours meet a calm background',
  'the details reward a second look',
  'a simple shape anchors the composition',
  'the mood is warm and unhurried',
];

/**
 * Offline stand-in: real, small files, the same bytes for the same (kind, model, prompt,
 * parameters). Video is an animated GIF (image/gif): a format every browser plays without a codec
 * library. Prompts `sandbox-fail` and `sandbox-timeout` rehearse the failure paths.
 */
export class SandboxGenerationProvider implements GenerationProvider {
  readonly name = 'sandbox' as const;
  private readonly delayMs: number;

  constructor(options: SandboxGenerationOptions = {}) {
    this.delayMs = Math.max(0, options.delayMs ?? 0);
  }

  async generate(request: GenerationRequest): Promise<GenerationResult> {
    const { signal } = request;
    signal.throwIfAborted();
    const prompt = request.prompt.trim();
    if (prompt === 'sandbox-fail') throw new ReadFailure('failed', 'sandbox generation failed, as the prompt "sandbox-fail" asks');
    if (prompt === 'sandbox-timeout') {
      await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
      throw new ReadFailure('timeout', 'sandbox generation never finished, as the prompt "sandbox-timeout" asks');
    }
    const steps = 4;
    for (let step = 0; step < steps; step++) {
      request.onProgress?.(step / steps);
      if (this.delayMs > 0) await pause(this.delayMs / steps, signal);
      signal.throwIfAborted();
    }
    const seed = createHash('sha256')
      .update(stableJson([request.kind, request.model, request.prompt, request.parameters]))
      .digest();
    const made = make(request, seed);
    request.onProgress?.(1);
    return { files: [made.file], usage: made.usage, sandbox: true, providerJobId: `sandbox-${seed.toString('hex').slice(0, 16)}` };
  }
}

function make(request: GenerationRequest, seed: Buffer): { file: GeneratedFile; usage: GenerationResult['usage'] } {
  const rng = random(seed.readUInt32BE(0));
  const { parameters } = request;
  switch (request.kind) {
    case 'image': {
      const width = intParam(parameters.width, 16, 512, 64);
      const height = intParam(parameters.height, 16, 512, 64);
      const cell = 4 + (seed[6]! % 12);
      const rgb = new Uint8Array(width * height * 3);
      for (let y = 0; y < height; y++)
        for (let x = 0; x < width; x++) {
          const t = (x + y) / (width + height - 2 || 1);
          // A diagonal blend of two seeded colours, darkened on a seeded checkerboard.
          const shade = (Math.floor(x / cell) + Math.floor(y / cell)) % 2 === 0 ? 1 : 0.8;
          for (let c = 0; c < 3; c++) rgb[(y * width + x) * 3 + c] = Math.round((seed[c]! * (1 - t) + seed[c + 3]! * t) * shade);
        }
      const file = { contentType: 'image/png', extension: 'png', bytes: encodePng(width, height, rgb), width, height };
      return { file, usage: { units: 1, unit: 'image' } };
    }
    case 'audio': {
      const seconds = intParam(parameters.duration_seconds, 1, 10, 2);
      const samples = new Int16Array(seconds * sampleRate);
      const noteLength = sampleRate / 4; // quarter-second notes
      const fade = sampleRate / 100;
      for (let start = 0; start < samples.length; start += noteLength) {
        const frequency = scale[Math.floor(rng() * scale.length)]!;
        for (let i = 0; i < noteLength && start + i < samples.length; i++) {
          // Short fades at both ends of a note: no clicks between notes.
          const envelope = Math.min(1, i / fade, (noteLength - i) / fade);
          samples[start + i] = Math.round(Math.sin((2 * Math.PI * frequency * i) / sampleRate) * envelope * 0.3 * 32767);
        }
      }
      const file = { contentType: 'audio/wav', extension: 'wav', bytes: encodeWav(samples, sampleRate), durationMs: seconds * 1000 };
      return { file, usage: { units: seconds, unit: 'seconds' } };
    }
    case 'video': {
      const width = intParam(parameters.width, 16, 256, 64);
      const height = intParam(parameters.height, 16, 256, 64);
      const count = intParam(parameters.frames, 2, 24, 8);
      const palette = new Uint8Array(256 * 3);
      for (let i = 0; i < 256; i++) for (let c = 0; c < 3; c++) palette[i * 3 + c] = Math.round((seed[c]! * (255 - i) + seed[c + 3]! * i) / 255);
      const size = Math.max(4, Math.floor(Math.min(width, height) / 4));
      const frames = Array.from({ length: count }, (_, f) => {
        const pixels = new Uint8Array(width * height);
        // Bands drifting diagonally, with a square crossing the frame: motion a viewer can see.
        const left = Math.round(((width - size) * f) / (count - 1));
        for (let y = 0; y < height; y++)
          for (let x = 0; x < width; x++) {
            const inSquare = x >= left && x < left + size && y >= (height - size) / 2 && y < (height + size) / 2;
            pixels[y * width + x] = inSquare ? 255 - seed[7]! : (x + y + f * 8 + seed[8]!) & 0xff;
          }
        return pixels;
      });
      const delayCs = 10;
      const bytes = encodeGif({ width, height, palette, frames, delayCs });
      return {
        file: { contentType: 'image/gif', extension: 'gif', bytes, width, height, durationMs: count * delayCs * 10 },
        usage: { units: count, unit: 'frames' },
      };
    }
    case 'text': {
      const topic = request.prompt.replace(/\s+/g, ' ').trim().slice(0, 80);
      const picked = [0, 1, 2].map(() => phrases[Math.floor(rng() * phrases.length)]!);
      const text = `[sandbox generation] A short piece on "${topic}": ${picked.join('; ')}. (model ${request.model}, reference ${seed.toString('hex').slice(0, 8)})\n`;
      const file = { contentType: 'text/plain; charset=utf-8', extension: 'txt', bytes: Buffer.from(text, 'utf8') };
      return { file, usage: { units: [...text].length, unit: 'characters' } };
    }
  }
}

/** A whole number parameter clamped to its range; anything else (absent, not a number) takes the default. */
function intParam(value: unknown, min: number, max: number, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.min(max, Math.max(min, Math.round(value))) : fallback;
}
