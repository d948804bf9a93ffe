/**
 * Live run events (Server-Sent Events), fed by Postgres NOTIFY so that any web process can follow a
 * run any worker is streaming. The worker sends `pg_notify('chat_run_events', {run_id,
 * conversation_id, length})` when it writes a snapshot and when the run ends (never the content);
 * each web process keeps ONE dedicated LISTEN connection, opened when its first stream subscribes,
 * shared by all its streams, reopened after an error and closed on stop. On a notification a
 * stream re-reads the run's snapshot and sends what was appended since its last event.
 */
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import type { Actor } from '../access/index.ts';
import type { Db } from '../db/knex.ts';
import type { Deps } from '../platform/deps.ts';
import type { Logger } from '../platform/logger.ts';
import { RUN_EVENTS_CHANNEL } from './run-notify.ts';
import { getRun, type RunRow } from './runs.ts';

const PING_MS = 15_000;
const RECONNECT_MS = 1_000;

interface Subscriber {
  /** A notification for the conversation (or, after a reconnect, a nudge to re-read). */
  changed(): void;
  /** The process stops: end the stream. */
  close(): void;
}

interface PgClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): void;
  on(event: 'error' | 'end', listener: (error?: Error) => void): void;
  removeAllListeners(): void;
}

/** The process's LISTEN connection and the streams waiting on it, by conversation. */
class RunEventHub {
  private client: PgClient | null = null;
  private connecting: Promise<void> | null = null;
  private reconnect: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly subscribers = new Map<string, Set<Subscriber>>();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  async subscribe(conversationId: string, subscriber: Subscriber): Promise<() => void> {
    const set = this.subscribers.get(conversationId) ?? new Set<Subscriber>();
    this.subscribers.set(conversationId, set);
    set.add(subscriber);
    const unsubscribe = () => {
      set.delete(subscriber);
      if (set.size === 0 && this.subscribers.get(conversationId) === set) this.subscribers.delete(conversationId);
    };
    try {
      await this.connect();
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  private connect(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('run events: the process is stopping'));
    if (this.client) return Promise.resolve();
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = (await this.db.client.acquireRawConnection()) as PgClient;
    const lost = (error?: Error) => {
      if (this.client !== client) return;
      this.log.warn({ err: error }, 'run events: LISTEN connection lost; reconnecting');
      this.client = null;
      client.removeAllListeners();
      void this.db.client.destroyRawConnection(client).catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('notification', (message) => this.dispatch(message.payload));
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.query(`LISTEN ${RUN_EVENTS_CHANNEL}`);
    } catch (error) {
      client.removeAllListeners();
      await this.db.client.destroyRawConnection(client).catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      client.removeAllListeners();
      await this.db.client.destroyRawConnection(client);
      throw new Error('run events: the process is stopping');
    }
    this.client = client;
  }

  private scheduleReconnect() {
    if (this.closed || this.reconnect || this.subscribers.size === 0) return;
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      this.connect().then(
        // Notifications sent while disconnected are lost: every stream re-reads its run.
        () => this.everySubscriber((s) => s.changed()),
        (error: unknown) => {
          this.log.warn({ err: error }, 'run events: reconnect failed');
          this.scheduleReconnect();
        },
      );
    }, RECONNECT_MS);
  }

  private everySubscriber(act: (subscriber: Subscriber) => void) {
    for (const set of [...this.subscribers.values()]) for (const s of [...set]) act(s);
  }

  private dispatch(payload: string | undefined) {
    let conversationId: unknown;
    try {
      conversationId = (JSON.parse(payload ?? '') as { conversation_id?: unknown }).conversation_id;
    } catch {
      return;
    }
    if (typeof conversationId !== 'string') return;
    for (const s of this.subscribers.get(conversationId) ?? []) s.changed();
  }

  /** Streams subscribed now (a disconnected client's is gone at once). */
  get followers(): number {
    let n = 0;
    for (const set of this.subscribers.values()) n += set.size;
    return n;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    this.everySubscriber((s) => s.close());
    this.subscribers.clear();
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners();
      await this.db.client.destroyRawConnection(client).catch(() => undefined);
    }
  }
}

const hubs = new WeakMap<Db, RunEventHub>();
const hubOf = (deps: Deps) => {
  const hub = hubs.get(deps.db) ?? new RunEventHub(deps.db, deps.log);
  hubs.set(deps.db, hub);
  return hub;
};

/** Closes the process's LISTEN connection and ends its open streams (web process stop). */
export async function closeRunEvents(db: Db): Promise<void> {
  await hubs.get(db)?.close();
  hubs.delete(db);
}

/** How many run-event streams this process serves now. */
export const openRunEventStreams = (db: Db): number => hubs.get(db)?.followers ?? 0;

/** A run is over for its followers once the worker has settled it (or it was marked failed). */
const isOver = (run: RunRow) => run.credits_charged !== null || run.status === 'failed';

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const doneOf = (run: RunRow) => ({ run_id: run.id, status: run.status, answer_message_id: run.answer_message_id });

/**
 * GET /conversations/{id}/run/events: `snapshot` (the current text), then `delta` events (the text
 * appended since the last event; a snapshot that was replaced rather than extended is sent again as
 * `snapshot`), then `done` {status, answer_message_id}, and the stream ends. No live run: one `done`.
 */
export async function streamRunEvents(deps: Deps, actor: Actor, conversationId: string, ctx: Context): Promise<void> {
  const first = await getRun(deps, actor, conversationId);
  const stream = new PassThrough();
  ctx.type = 'text/event-stream';
  ctx.set('Cache-Control', 'no-cache, no-transform');
  ctx.set('X-Accel-Buffering', 'no');
  if (isOver(first)) {
    stream.end(frame('done', doneOf(first)));
    ctx.body = stream;
    return;
  }

  const runId = first.id;
  let sent: string | null = null;
  let ended = false;
  let reading = false;
  let again = false;
  let unsubscribe = () => {};
  const ping = setInterval(() => {
    stream.write(': ping\n\n');
    update(); // also covers a notification that never came (a worker that died)
  }, PING_MS);
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    unsubscribe();
    stream.end();
  };
  // Reads are serialized; a notification arriving during a read triggers one more read.
  const update = () => {
    if (ended) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    void (async () => {
      try {
        do {
          again = false;
          const run = (await deps.db('chat_runs').where({ id: runId }).first()) as RunRow | undefined;
          if (!run || ended) return end();
          if (sent === null || !run.snapshot.startsWith(sent)) {
            stream.write(frame('snapshot', { run_id: run.id, status: run.status, content: run.snapshot }));
          } else if (run.snapshot.length > sent.length) {
            stream.write(frame('delta', { run_id: run.id, text: run.snapshot.slice(sent.length) }));
          }
          sent = run.snapshot;
          if (isOver(run)) {
            stream.write(frame('done', doneOf(run)));
            return end();
          }
        } while (again);
      } catch (error) {
        deps.log.warn({ err: error, run_id: runId }, 'run events: reading the run failed');
        end();
      } finally {
        reading = false;
      }
    })();
  };

  // Subscribe before the first read, so no snapshot written in between is missed.
  unsubscribe = await hubOf(deps).subscribe(conversationId, { changed: update, close: end });
  ctx.req.socket.setTimeout(0);
  ctx.res.on('close', end); // client gone (or response finished): stop listening
  ctx.body = stream;
  update();
}
