import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * Young-generation collections paced by the bytes a process streams.
 *
 * A request body arrives in Buffers whose memory lies outside V8's heap; their small wrappers die
 * young. A process that allocates little else while it streams (an upload: socket → hash → file)
 * never fills its young generation, so nothing frees those Buffers until V8's external-memory limit
 * (≈ 64 MiB) starts a full mark-compact of the whole heap instead: in the web process, ≈ 80 MB live
 * (the app's modules), 50–100 ms of main-thread time on a quiet machine and several hundred under
 * load, three times per 200 MiB uploaded, with the RSS peaking above 64 MiB of dead chunks
 * (bench:uploads, traced with --trace-gc). A young collection every `every` bytes frees the same
 * Buffers in well under a millisecond, since it visits only what is still alive in the young
 * generation, and keeps the dead bytes far below the limit.
 *
 * The collection is V8's own `gc({type: 'minor'})`, exposed at run time (the flag set before the
 * function is looked up in a fresh context) so no process needs a command-line flag; where that
 * fails, streaming simply runs without it.
 */
export class YoungCollections {
  private streamed = 0;

  private readonly every: number;
  private readonly collect: (() => void) | null;
  constructor(every: number, collect: (() => void) | null = minorCollection()) {
    this.every = every;
    this.collect = collect;
  }

  /** Counts `bytes` streamed through the process; collects once `every` bytes have been since the last collection. */
  streamedBytes(bytes: number): void {
    if (!this.collect) return;
    this.streamed += bytes;
    if (this.streamed < this.every) return;
    this.streamed = 0;
    this.collect();
  }
}

let exposed: ((options: { type: 'minor' }) => void) | null | undefined;

function minorCollection(): (() => void) | null {
  if (exposed === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc = vm.runInNewContext('gc') as unknown;
      exposed = typeof gc === 'function' ? (gc as (options: { type: 'minor' }) => void) : null;
    } catch {
      exposed = null;
    }
  }
  const gc = exposed;
  return gc ? () => gc({ type: 'minor' }) : null;
}
