import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { NotificationHub } from '../db/notifications.ts';
import type { Logger } from '../platform/logger.ts';
import { queueNotifyChannel, readyQueues } from './boss-sql/index.ts';

/** pg-boss's own poll of every slot: only a backstop here (a slot sleeps until woken). */
export const SLOT_BACKSTOP_SECONDS = 30;

/**
 * Wakes a worker's job slots one at a time. pg-boss wakes every slot of a queue on each NOTIFY and
 * has every idle slot poll its queue; with ~25 queues × WORKER_CONCURRENCY slots per worker, about
 * half of the database's work per generation was fetches that found nothing (bench:generations).
 * Here a slot sleeps (pg-boss's poll only every SLOT_BACKSTOP_SECONDS) until it is woken:
 * - a new job (pg-boss's NOTIFY, which the worker LISTENs on itself) wakes one idle slot of its queue;
 * - a slot that fetched a job wakes one more idle slot (a batch insert NOTIFYs once; the backlog
 *   ramps up to every slot), and a slot that finished a job fetches again at once — so a backlog
 *   drains without pause, and a slot's first empty fetch puts it back to sleep;
 * - every `pollMs` one statement asks which queues have jobs ready (retries and delayed jobs are not
 *   notified; a notification may be lost) and one idle slot of each is woken.
 * A slot already woken is not woken again before it has fetched.
 */
export class SlotWaker {
  /** Slot id → when it was last woken. */
  private readonly wokenAt = new Map<string, number>();
  private readonly unsubscribes: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(
    private readonly boss: PgBoss,
    private readonly db: Knex,
    private readonly log: Logger,
    private readonly queues: readonly string[],
    private readonly pollMs: number,
  ) {}

  /** LISTENs for new jobs and starts the poll. Without NOTIFY (the LISTEN failed) the poll still finds every job. */
  async start(hub: NotificationHub): Promise<void> {
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    try {
      const channel = await queueNotifyChannel(this.db);
      // After a reconnect the hub calls `changed` for every queue: notifications may have been missed.
      for (const queue of this.queues) this.unsubscribes.push(await hub.subscribe(channel, queue, { changed: () => this.wake(queue), close: () => undefined }));
    } catch (error) {
      this.log.warn({ err: error }, 'job slots: no NOTIFY of new jobs; polling every %d ms', this.pollMs);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
  }

  /** A slot of `queue` fetched a job: there may be more, so one more idle slot fetches. */
  fetched(queue: string): void {
    this.wake(queue);
  }

  /** A slot of `queue` finished a job: the slots holding a job (this one among them) fetch again at once, not after a poll. */
  finished(queue: string): void {
    for (const slot of this.boss.getWipData()) if (slot.name === queue && slot.count > 0) this.boss.notifyWorker(slot.id);
  }

  /** Wakes one idle slot of `queue` that is not already on its way to fetch; false when there is none. */
  wake(queue: string): boolean {
    for (const slot of this.boss.getWipData()) {
      if (slot.name !== queue || slot.count > 0 || slot.state !== 'active') continue;
      const woken = this.wokenAt.get(slot.id);
      if (woken !== undefined && (slot.lastFetchedOn ?? 0) < woken) continue;
      this.wokenAt.set(slot.id, Date.now());
      this.boss.notifyWorker(slot.id);
      return true;
    }
    return false;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const live = new Set(this.boss.getWipData().map((slot) => slot.id));
      for (const id of this.wokenAt.keys()) if (!live.has(id)) this.wokenAt.delete(id);
      for (const queue of await readyQueues(this.db, this.queues)) this.wake(queue);
    } catch (error) {
      // The database is away: the worker's database watch reports it.
      this.log.debug({ err: error }, 'job slots: poll failed');
    } finally {
      this.polling = false;
    }
  }
}
