import type { Knex } from 'knex';
import { isLeaseLost, type JobContext } from './define.ts';

export interface ProgressPublisher<T> {
  /** The latest value; written at once if the last write is `everyMs` old (or `now`), else with the next one. */
  publish(value: T, now?: boolean): void;
  /** Writes a value still waiting, and waits for the write in flight. */
  flush(): Promise<void>;
  /** No more writes. */
  stop(): void;
}

/**
 * Publishes a running attempt's progress (a generation's fraction, a chat turn's text so far) at
 * most every `everyMs`, each write a step under the attempt's lease — an attempt that lost its job
 * stops publishing (the handler hears it through its signal). Progress is for watchers; a failed
 * write is logged and the next value tries again.
 */
export function progressPublisher<T>(
  job: Pick<JobContext, 'step' | 'log'>,
  everyMs: number,
  write: (trx: Knex.Transaction, value: T) => Promise<unknown>,
): ProgressPublisher<T> {
  let latest: { value: T } | null = null;
  let lastWrite = 0;
  let writing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;
  let soon: NodeJS.Immediate | null = null;
  let stopped = false;
  const cancelPending = () => {
    if (timer) clearTimeout(timer);
    if (soon) clearImmediate(soon);
    timer = soon = null;
  };

  const writeLatest = () => {
    cancelPending();
    if (!latest || stopped) return;
    const { value } = latest;
    latest = null;
    lastWrite = Date.now();
    writing = writing.then(() =>
      job
        .step((trx) => write(trx, value))
        .then(() => undefined)
        .catch((error: unknown) => {
          if (isLeaseLost(error)) stopped = true;
          else job.log.warn({ err: error }, 'progress write failed');
        }),
    );
  };

  return {
    publish(value, now = false) {
      if (stopped) return;
      latest = { value };
      const wait = everyMs - (Date.now() - lastWrite);
      if (now || wait <= 0) {
        if (timer) clearTimeout(timer);
        timer = null;
        // On the next turn of the event loop, not now: work that ends at once (a stream answered
        // in one go) stops the publisher first, and its end writes the final value instead — no
        // write of a value already superseded, no second transaction on the job row beside the end.
        soon ??= setImmediate(writeLatest);
      } else if (!soon) timer ??= setTimeout(writeLatest, wait);
    },
    async flush() {
      writeLatest();
      await writing;
    },
    stop() {
      stopped = true;
      cancelPending();
    },
  };
}
