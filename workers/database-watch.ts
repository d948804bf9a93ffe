import { isConnectionError } from '../src/db/connection-errors.ts';
import type { Logger } from '../src/platform/logger.ts';

export { isConnectionError };

export interface DatabaseWatchOptions {
  log: Logger;
  /** A cheap query; resolves once the database answers again. */
  probe: () => Promise<unknown>;
  /** Stop fetching jobs (every queue's poll would otherwise fail, and log, every couple of seconds). */
  pause: () => Promise<void>;
  /** Fetch jobs again. */
  resume: () => Promise<void>;
  firstDelayMs?: number;
  maxDelayMs: number;
}

/**
 * Receives pg-boss's errors. The first one that says the database is gone is logged once; then job
 * pick-up pauses and one probe query retries with exponential backoff (a line per failed probe)
 * until the database answers, when pick-up resumes. Errors meanwhile are counted, not logged.
 */
export class DatabaseWatch {
  #down: { since: number; attempt: number; suppressed: number; timer: NodeJS.Timeout | null } | null = null;
  #stopped = false;

  private readonly options: DatabaseWatchOptions;
  constructor(options: DatabaseWatchOptions) {
    this.options = options;
  }

  get down(): boolean {
    return this.#down !== null;
  }

  report(error: unknown): void {
    const { log } = this.options;
    if (this.#down) {
      this.#down.suppressed++;
      return;
    }
    // Once shutdown began, pg-boss reports work cut short by its own close (a poll or a schedule
    // finding the pool closed): expected, so not an error.
    if (this.#stopped) return void log.debug({ err: error }, 'pg-boss during shutdown');
    if (!isConnectionError(error)) return void log.error({ err: error }, 'pg-boss');
    this.#down = { since: Date.now(), attempt: 0, suppressed: 0, timer: null };
    log.error({ err: error }, 'database unreachable: job pick-up paused, reconnecting with backoff');
    this.options.pause().catch((pauseError: unknown) => log.warn({ err: pauseError }, 'pausing job pick-up failed'));
    this.#scheduleProbe();
  }

  /** Ends probing (shutdown). */
  stop(): void {
    this.#stopped = true;
    if (this.#down?.timer) clearTimeout(this.#down.timer);
  }

  #scheduleProbe(): void {
    const down = this.#down;
    if (!down || this.#stopped) return;
    const delay = Math.min(this.options.maxDelayMs, (this.options.firstDelayMs ?? 1000) * 2 ** down.attempt);
    down.timer = setTimeout(() => void this.#probe(), delay);
  }

  async #probe(): Promise<void> {
    const down = this.#down;
    if (!down || this.#stopped) return;
    down.attempt++;
    try {
      await this.options.probe();
    } catch (error) {
      this.options.log.warn(
        { attempt: down.attempt, down_ms: Date.now() - down.since, suppressed_errors: down.suppressed, reason: (error as Error).message },
        'database still unreachable',
      );
      return this.#scheduleProbe();
    }
    if (this.#stopped) return;
    this.#down = null;
    this.options.log.info({ down_ms: Date.now() - down.since, suppressed_errors: down.suppressed }, 'database reachable again: job pick-up resumed');
    await this.options.resume().catch((error: unknown) => this.report(error));
  }
}
