// An extraction thread: imports one module, calls one of its functions with the given arguments,
// and answers its result or why it failed. Started by ./run.ts under memory and time ceilings:
// whatever the file does here ends this thread at worst, never the process.
import { parentPort, workerData } from 'node:worker_threads';
import type { ContainedTask, ThreadAnswer } from './run.ts';

const task = workerData as ContainedTask;
let answer: ThreadAnswer;
try {
  const run = (await import(task.module))[task.name] as (...args: unknown[]) => unknown;
  answer = { ok: true, result: await run(...task.args) };
} catch (error) {
  const code = (error as { code?: unknown }).code;
  answer = { ok: false, code: typeof code === 'string' ? code : null, message: error instanceof Error ? error.message : String(error) };
}
parentPort!.postMessage(answer);
