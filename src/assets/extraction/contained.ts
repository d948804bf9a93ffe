import { Worker } from 'node:worker_threads';
import { type RefusalCode, type StageResult, UnreadableAssetError } from '../enrichment.ts';
import type { ExtractionLimits } from './limits.ts';

/** The stages whose parsers run in an extraction thread (images decode in libvips, outside the JS heap, under its own pixel limit). */
export type ContainedStage = 'pdf' | 'docx' | 'media';

export interface ContainedTask {
  stage: ContainedStage;
  mediaType: string;
  limits: ExtractionLimits;
  bytes: Uint8Array;
}

export type ThreadAnswer = { ok: true; result: StageResult } | { ok: false; code: RefusalCode | null; message: string };

const threadFile = new URL('./thread.ts', import.meta.url);
/** How often the thread's CPU time and memory are read. */
const SAMPLE_MS = 100;
const MiB = 1024 * 1024;

/**
 * Runs one extraction in a thread of its own, started for it and ended with it: a V8 heap capped
 * by `resourceLimits`, and its CPU time, wall-clock time and memory (heap plus ArrayBuffers, which
 * the heap cap does not see) read every 100 ms; past a ceiling the thread is terminated and the
 * extraction refused (`extraction_timeout`, `extraction_out_of_memory`), the process untouched.
 * One thread per extraction, not a pool: a hostile file leaves nothing behind (a heap it bloated,
 * a parser's caches), and starting a thread costs far less than the extractions that need one.
 */
export function extractContained(stage: ContainedStage, bytes: Buffer, mediaType: string, limits: ExtractionLimits, signal: AbortSignal): Promise<StageResult> {
  signal.throwIfAborted();
  // The thread's own copy, handed over rather than copied again.
  const copy = new Uint8Array(bytes);
  const task: ContainedTask = { stage, mediaType, limits, bytes: copy };
  const worker = new Worker(threadFile, {
    workerData: task,
    transferList: [copy.buffer],
    resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb, stackSizeMb: 4 },
  });
  return new Promise<StageResult>((resolve, reject) => {
    let settled = false;
    const end = (outcome: { result: StageResult } | { error: unknown }) => {
      if (settled) return;
      settled = true;
      clearTimeout(wall);
      clearInterval(sampler);
      signal.removeEventListener('abort', aborted);
      void worker.terminate();
      if ('result' in outcome) resolve(outcome.result);
      else reject(outcome.error);
    };
    const timedOut = (what: string) =>
      end({ error: new UnreadableAssetError(`opening the file took more than ${what}; the extraction was stopped`, 'extraction_timeout') });
    const outOfMemory = () =>
      end({
        error: new UnreadableAssetError(`opening the file needed more than ${limits.memoryMb} MB; the extraction was stopped`, 'extraction_out_of_memory'),
      });
    const aborted = () => end({ error: signal.reason });
    signal.addEventListener('abort', aborted, { once: true });
    const wall = setTimeout(() => timedOut(`${limits.wallMs / 1000} s`), limits.wallMs);
    const sampler = setInterval(() => {
      Promise.all([worker.cpuUsage(), worker.getHeapStatistics()]).then(
        ([cpu, heap]) => {
          if ((cpu.user + cpu.system) / 1000 > limits.cpuMs) timedOut(`${limits.cpuMs / 1000} s of CPU time`);
          else if (heap.used_heap_size + heap.external_memory > limits.memoryMb * MiB) outOfMemory();
        },
        () => undefined, // the thread is ending: its exit settles the extraction
      );
    }, SAMPLE_MS);
    worker.on('message', (answer: ThreadAnswer) => {
      if (answer.ok) end({ result: answer.result });
      else end({ error: answer.code ? new UnreadableAssetError(answer.message, answer.code) : new Error(answer.message) });
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') outOfMemory();
      else end({ error });
    });
    worker.on('exit', (code) => end({ error: new Error(`the extraction thread exited (${code}) without an answer`) }));
  });
}
