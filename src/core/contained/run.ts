import { Worker } from 'node:worker_threads';
import { FileRefusal } from './refusal.ts';

/** What one extraction may cost: CPU time of its thread, wall-clock time, and memory (V8 heap plus ArrayBuffers). */
export interface Ceilings {
  cpuMs: number;
  wallMs: number;
  memoryMb: number;
}

/** A function of a module, called in the thread: its arguments are structured-cloned (ArrayBuffers in `transfer` handed over). */
export interface ContainedTask {
  module: string;
  name: string;
  args: unknown[];
}

export type ThreadAnswer = { ok: true; result: unknown } | { ok: false; code: string | null; message: string };

const threadFile = new URL('./thread.ts', import.meta.url);
/** How often the thread's CPU time and memory are read. */
const SAMPLE_MS = 100;
const MiB = 1024 * 1024;

/**
 * Runs `module`'s export `name` in a thread of its own, started for it and ended with it: a V8
 * heap capped by `resourceLimits`, and its CPU time, wall-clock time and memory (heap plus
 * ArrayBuffers, which the heap cap does not see) read every 100 ms; past a ceiling the thread is
 * terminated and the call fails with `FileRefusal` (`extraction_timeout`,
 * `extraction_out_of_memory`), the process untouched. What the function throws comes back as a
 * `FileRefusal` with the error's `code` (null when it has none). One thread per call, not a pool:
 * a hostile file leaves nothing behind (a heap it bloated, a parser's caches), and starting a
 * thread costs far less than the extractions that need one. An abort ends the thread with the
 * signal's reason.
 */
export function runContained<T>(
  task: { module: URL; name: string; args: unknown[]; transfer?: ArrayBuffer[] },
  ceilings: Ceilings,
  signal: AbortSignal,
): Promise<T> {
  signal.throwIfAborted();
  const workerData: ContainedTask = { module: task.module.href, name: task.name, args: task.args };
  const worker = new Worker(threadFile, {
    workerData,
    transferList: task.transfer ?? [],
    resourceLimits: { maxOldGenerationSizeMb: ceilings.memoryMb, stackSizeMb: 4 },
  });
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const end = (outcome: { result: T } | { error: unknown }) => {
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
      end({ error: new FileRefusal(`opening the file took more than ${what}; the extraction was stopped`, 'extraction_timeout') });
    const outOfMemory = () =>
      end({ error: new FileRefusal(`opening the file needed more than ${ceilings.memoryMb} MB; the extraction was stopped`, 'extraction_out_of_memory') });
    const aborted = () => end({ error: signal.reason });
    signal.addEventListener('abort', aborted, { once: true });
    const wall = setTimeout(() => timedOut(`${ceilings.wallMs / 1000} s`), ceilings.wallMs);
    const sampler = setInterval(() => {
      // Both readings are Node 24's (older Nodes keep the heap cap and the wall clock).
      if (typeof worker.cpuUsage !== 'function' || typeof worker.getHeapStatistics !== 'function') return;
      Promise.all([worker.cpuUsage(), worker.getHeapStatistics()]).then(
        ([cpu, heap]) => {
          if ((cpu.user + cpu.system) / 1000 > ceilings.cpuMs) timedOut(`${ceilings.cpuMs / 1000} s of CPU time`);
          else if (heap.used_heap_size + heap.external_memory > ceilings.memoryMb * MiB) outOfMemory();
        },
        () => undefined, // the thread is ending: its exit settles the call
      );
    }, SAMPLE_MS);
    worker.on('message', (answer: ThreadAnswer) => {
      if (answer.ok) end({ result: answer.result as T });
      else end({ error: new FileRefusal(answer.message, answer.code) });
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') outOfMemory();
      else end({ error });
    });
    worker.on('exit', (code) => end({ error: new Error(`the extraction thread exited (${code}) without an answer`) }));
  });
}
