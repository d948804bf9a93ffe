// The extraction thread: opens one document or media file and answers what it yields, or why it
// refused. Started by ./contained.ts under memory and time ceilings; whatever the file does here
// ends this thread at worst, never the worker process.
import { parentPort, workerData } from 'node:worker_threads';
import { UnreadableAssetError } from '../enrichment.ts';
import type { ContainedTask, ThreadAnswer } from './contained.ts';
import { probeMedia, readDocx, readPdf } from './documents.ts';

const task = workerData as ContainedTask;
const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);

async function extract() {
  switch (task.stage) {
    case 'pdf':
      return readPdf(bytes, task.limits);
    case 'docx':
      return readDocx(bytes, task.limits);
    case 'media':
      return probeMedia(bytes, task.mediaType);
  }
}

let answer: ThreadAnswer;
try {
  answer = { ok: true, result: await extract() };
} catch (error) {
  const refused = error instanceof UnreadableAssetError;
  answer = { ok: false, code: refused ? error.code : null, message: error instanceof Error ? error.message : String(error) };
}
parentPort!.postMessage(answer);
