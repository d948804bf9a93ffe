import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { NotificationHub } from '../db/notifications.ts';
import type { Logger } from '../platform/logger.ts';
import { type FetchSeen, queueNotifyChannel, readyQueues } from './boss-sql/index.ts';

/** How many jobs a new-job notification announces: pg-boss's own (the bare queue name) one, a batch's (src/jobs/enqueue.ts) its `jobs`. */
const jobsOf = (data?: Record<string, unknown>) => (typeof data?.jobs === 'number' && data.jobs > 1 ? Math.floor(data.jobs) : 1);

/** pg-boss's own poll of every slot: only a backstop here (a slot sleeps until woken). */
export const SLOT_BACKSTOP_SECONDS = 30;

/** Slots a queue opens at start (or after the database came back); more open as work arrives. */
export const SLOTS_AT_START = 4;

/**
 * pg-boss's backstop poll of one slot of a queue with `slots` slots: every pg-boss slot polls on its
 * own, so the interval grows with the slots, keeping a queue's idle slots together at about
 * SLOTS_AT_START fetches per SLOT_BACKSTOP_SECONDS however many it has (128 waiting slots: one
 * poll each per 16 minutes). The slot waker's one poll for every queue finds what NOTIFY missed.
 */
export const slotBackstopSeconds = (slots: number, pollSeconds: number): number =>
  Math.max(SLOT_BACKSTOP_SECONDS, pollSeconds) * Math.max(1, Math.ceil(slots / SLOTS_AT_START));

/** Opens `count` more slots of `queue` (pg-boss workers, each fetching as it starts). */
export type OpenSlots = (queue: string, count: number) => Promise<unknown>;

/** What a worker knows of one queue's waiting work (see SlotWaker). */
interface QueueState {
  /** Jobs announced to this worker (NOTIFY) that none of its fetches has taken yet. */
  announced: number;
  /** Of those, jobs that found no idle slot to wake here. */
  owed: number;
  /** Work of unknown extent: a fetch took a job nobody announced (a backlog from before the worker started, retries the poll found). */
  backlog: boolean;
  /** The last empty fetch left a group out: that group's jobs may be waiting for one of our slots to end. */
  limited: boolean;
  /** When the last job was announced (Date.now()): a fetch sent before it may not have seen it. */
  at: number;
  /** Slots opened (or opening) for the queue on this worker; at most its capacity. */
  opened: number;
}

/**
 * Wakes a worker's job slots one at a time. pg-boss wakes every slot of a queue on each NOTIFY and
 * has every idle slot poll its queue; with ~25 queues × WORKER_CONCURRENCY slots per worker, about
 * half of the database's work per generation was fetches that found nothing (bench:generations).
 * Here a slot sleeps (pg-boss's poll only every SLOT_BACKSTOP_SECONDS) until it is woken:
 * - a new job (pg-boss's NOTIFY, which the worker LISTENs on itself; a batch says how many) wakes one
 *   idle slot of its queue; a job that finds none here is *owed*;
 * - a fetch that takes a job while jobs are owed, or more jobs than were announced (a backlog this
 *   worker was not told of: queued before it started, retries found by its poll), wakes one more idle
 *   slot, and the slots that finish a job then fetch again at once — so a backlog drains without
 *   pause, until a fetch finds nothing;
 * - a fetch that finds nothing, sent after the last job was announced, means nothing is left for this
 *   worker: what was announced or owed is forgotten. One that found nothing while pg-boss left a
 *   group out (at this worker's share, or at the fleet's group limit) keeps finishing slots fetching
 *   again, since that group's jobs may be waiting for one of ours to end;
 * - every `pollMs` one statement asks which queues have jobs ready (retries and delayed jobs are not
 *   notified; a notification may be lost) and wakes one idle slot of each, as a backlog.
 * A slot already woken is not woken again before it has fetched. So a job announced to every worker
 * costs one fetch per worker (one takes it) and no more: a slot that fetched used to wake one more,
 * and one that finished to fetch again, whatever was waiting — in bench:generations those found
 * nothing nearly always.
 *
 * A queue's slots are opened as they are needed, up to its capacity (`localConcurrencyOf`: hundreds
 * for waiting work): SLOTS_AT_START at start, then, when work finds no idle slot to wake, as many
 * more as jobs were announced (a backlog: as many again as are open), each fetching as it opens.
 * So a worker never sends a fetch per slot it was allowed but never needed.
 */
export class SlotWaker {
  /** Slot id → when it was last woken. */
  private readonly wokenAt = new Map<string, number>();
  private readonly states = new Map<string, QueueState>();
  private readonly unsubscribes: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  private polling = false;

  private readonly boss: PgBoss;
  private readonly db: Knex;
  private readonly log: Logger;
  private readonly queues: readonly string[];
  private readonly pollMs: number;
  /** Each queue's slots per worker at most, and how to open more; absent: slots are opened by the caller alone. */
  private readonly capacity: { of: ReadonlyMap<string, number>; open: OpenSlots } | undefined;
  constructor(boss: PgBoss, db: Knex, log: Logger, queues: readonly string[], pollMs: number, capacity?: { of: ReadonlyMap<string, number>; open: OpenSlots }) {
    this.boss = boss;
    this.db = db;
    this.log = log;
    this.queues = queues;
    this.pollMs = pollMs;
    this.capacity = capacity;
  }

  /** Opens the queue's first slots (at start, or after the database came back: its slots were stopped). */
  async openFirst(queue: string): Promise<void> {
    const state = this.state(queue);
    state.opened = 0;
    await this.open(queue, SLOTS_AT_START);
  }

  /** Opens up to `count` more slots of `queue` within its capacity; how many were opened. */
  private open(queue: string, count: number): Promise<number> {
    const capacity = this.capacity?.of.get(queue);
    if (!this.capacity || capacity === undefined) return Promise.resolve(0);
    const state = this.state(queue);
    const more = Math.min(count, capacity - state.opened);
    if (more <= 0) return Promise.resolve(0);
    state.opened += more;
    return this.capacity.open(queue, more).then(
      () => more,
      (error: unknown) => {
        state.opened -= more;
        this.log.warn({ err: error, queue }, 'job slots: could not open more slots');
        return 0;
      },
    );
  }

  /** LISTENs for new jobs and starts the poll. Without NOTIFY (the LISTEN failed) the poll still finds every job. */
  async start(hub: NotificationHub): Promise<void> {
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    try {
      const channel = await queueNotifyChannel(this.db);
      // After a reconnect the hub calls `changed` for every queue: notifications may have been missed (the poll finds what they announced).
      for (const queue of this.queues)
        this.unsubscribes.push(await hub.subscribe(channel, queue, { changed: (data) => this.arrived(queue, jobsOf(data)), close: () => undefined }));
    } catch (error) {
      this.log.warn({ err: error }, 'job slots: no NOTIFY of new jobs; polling every %d ms', this.pollMs);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
  }

  /** `jobs` new jobs of `queue` were announced: one idle slot each, the rest owed. */
  arrived(queue: string, jobs = 1): void {
    const state = this.state(queue);
    state.announced += jobs;
    state.at = Date.now();
    for (let woken = 0; woken < jobs; woken++) {
      if (this.wakeIdle(queue)) continue;
      // No idle slot: open one per job left (each fetches as it opens); what the capacity cannot take is owed.
      const left = jobs - woken;
      state.owed += left;
      void this.open(queue, left).then((opened) => {
        state.owed = Math.max(0, state.owed - opened);
      });
      return;
    }
  }

  /** What a fetch of this worker found (./boss-sql/claims.ts `recordClaims` reports each). */
  fetchSeen({ queue, startedAt, limited, found, restored }: FetchSeen): void {
    const state = this.state(queue);
    if (restored) {
      state.limited = true;
      return;
    }
    if (found > 0) {
      if (found > state.announced) state.backlog = true;
      state.announced = Math.max(0, state.announced - found);
      // There may be more: one more idle slot fetches.
      if ((state.owed > 0 || state.backlog) && this.wake(queue)) state.owed = Math.max(0, state.owed - 1);
      return;
    }
    if (state.at < startedAt) {
      state.announced = 0;
      state.owed = 0;
      state.backlog = false;
    }
    state.limited = limited;
  }

  /** A slot of `queue` finished a job: when work may be waiting, the slots holding a job (this one among them) fetch again at once, not after a poll. */
  finished(queue: string): void {
    const state = this.state(queue);
    if (state.owed > 0) state.owed -= 1;
    else if (!state.backlog && !state.limited) return;
    for (const slot of this.boss.getWipData()) if (slot.name === queue && slot.count > 0) this.boss.notifyWorker(slot.id);
  }

  private state(queue: string): QueueState {
    let state = this.states.get(queue);
    if (!state) {
      state = { announced: 0, owed: 0, backlog: false, limited: false, at: 0, opened: 0 };
      this.states.set(queue, state);
    }
    return state;
  }

  /**
   * Wakes one idle slot of `queue` that is not already on its way to fetch; with none, opens more
   * (as many as are open: a backlog of unknown size) when the capacity allows. False when neither.
   */
  wake(queue: string): boolean {
    if (this.wakeIdle(queue)) return true;
    const state = this.state(queue);
    const capacity = this.capacity?.of.get(queue);
    if (capacity === undefined || state.opened >= capacity) return false;
    void this.open(queue, Math.max(1, state.opened));
    return true;
  }

  private wakeIdle(queue: string): boolean {
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
      for (const queue of await readyQueues(this.db, this.queues)) {
        // Ready jobs of unknown number (retries, delayed jobs, missed notifications): drained as a backlog.
        this.state(queue).backlog = true;
        this.wake(queue);
      }
    } catch (error) {
      // The database is away: the worker's database watch reports it.
      this.log.debug({ err: error }, 'job slots: poll failed');
    } finally {
      this.polling = false;
    }
  }
}
