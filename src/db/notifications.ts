/**
 * Postgres NOTIFY for waiting web requests: one dedicated LISTEN connection per process, opened
 * when the first subscriber arrives, shared by every subscriber of every channel, reopened after
 * an error and closed on stop. A notification's payload is a small JSON object with a `key` (a
 * conversation id, a metered call id) or `keys` (several at once), or a bare key (pg-boss's queue
 * name): subscribers wait on a channel and a key. Sent inside a
 * transaction, a notification is delivered at commit, so a subscriber that re-reads on it sees
 * what was committed.
 *
 * Notifications sent while the connection was down are lost: after a reconnect every subscriber
 * is told `changed()` and re-reads, so nothing waits forever on a lost one.
 */
import type { Knex } from 'knex';
import type { Logger } from '../platform/logger.ts';
import type { Db } from './knex.ts';

const RECONNECT_MS = 1_000;

export interface Subscriber {
  /** A notification for the key, with its payload's other fields (or, after a reconnect, a nudge to re-read: no data). */
  changed(data?: Record<string, unknown>): void;
  /** The process stops: give up waiting. */
  close(): void;
}

/** Sends `{key, ...data}` on `channel` (at commit inside a transaction). Keep it small: ids and counters, never content. */
export const notify = (db: Knex | Knex.Transaction, channel: string, key: string, data: Record<string, unknown> = {}) =>
  db.raw('SELECT pg_notify(?, ?)', [channel, JSON.stringify({ key, ...data })]);

interface PgClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): void;
  on(event: 'error' | 'end', listener: (error?: Error) => void): void;
  removeAllListeners(): void;
}

export class NotificationHub {
  private client: PgClient | null = null;
  private connecting: Promise<void> | null = null;
  private reconnect: NodeJS.Timeout | null = null;
  private closed = false;
  private failedReconnects = 0;
  /** channel → key → subscribers */
  private readonly channels = new Map<string, Map<string, Set<Subscriber>>>();
  /** Channels the current connection listens on. */
  private readonly listening = new Set<string>();

  private readonly db: Db;
  private readonly log: Logger;
  constructor(db: Db, log: Logger) {
    this.db = db;
    this.log = log;
  }

  /** Subscribes, then makes sure the connection LISTENs on the channel; resolves once it does. Returns the unsubscribe. */
  async subscribe(channel: string, key: string, subscriber: Subscriber): Promise<() => void> {
    const keys = this.channels.get(channel) ?? new Map<string, Set<Subscriber>>();
    this.channels.set(channel, keys);
    const set = keys.get(key) ?? new Set<Subscriber>();
    keys.set(key, set);
    set.add(subscriber);
    const unsubscribe = () => {
      set.delete(subscriber);
      if (set.size === 0 && keys.get(key) === set) keys.delete(key);
    };
    try {
      await this.connect();
      await this.listen(channel);
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /** Subscribers waiting now (on one channel, or all). */
  subscribers(channel?: string): number {
    let n = 0;
    for (const [name, keys] of this.channels) if (channel === undefined || name === channel) for (const set of keys.values()) n += set.size;
    return n;
  }

  private connect(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('notifications: the process is stopping'));
    if (this.client) return Promise.resolve();
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async listen(channel: string): Promise<void> {
    if (this.listening.has(channel) || !this.client) return;
    this.listening.add(channel);
    try {
      await this.client.query(`LISTEN ${channelName(channel)}`);
    } catch (error) {
      this.listening.delete(channel);
      throw error;
    }
  }

  private async open(): Promise<void> {
    const client = (await this.db.client.acquireRawConnection()) as PgClient;
    const lost = (error?: Error) => {
      if (this.client !== client) return;
      this.log.warn({ err: error }, 'notifications: LISTEN connection lost; reconnecting');
      this.client = null;
      this.listening.clear();
      client.removeAllListeners();
      void this.db.client.destroyRawConnection(client).catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('notification', (message) => this.dispatch(message.channel, message.payload));
    client.on('error', lost);
    client.on('end', lost);
    if (this.closed) {
      client.removeAllListeners();
      await this.db.client.destroyRawConnection(client);
      throw new Error('notifications: the process is stopping');
    }
    this.client = client;
    try {
      for (const channel of this.channels.keys()) await this.listen(channel);
    } catch (error) {
      lost(error as Error);
      throw error;
    }
  }

  private scheduleReconnect() {
    if (this.closed || this.reconnect || this.subscribers() === 0) return;
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      this.connect().then(
        // Notifications sent while disconnected are lost: every subscriber re-reads.
        () => {
          this.failedReconnects = 0;
          this.everySubscriber((s) => s.changed());
        },
        (error: unknown) => {
          // One line per outage, not one a second: the process's database watch reports the outage itself.
          (this.failedReconnects++ === 0 ? this.log.warn : this.log.debug).call(this.log, { err: error }, 'notifications: reconnect failed');
          this.scheduleReconnect();
        },
      );
    }, RECONNECT_MS);
  }

  private everySubscriber(act: (subscriber: Subscriber) => void) {
    for (const keys of [...this.channels.values()]) for (const set of [...keys.values()]) for (const s of [...set]) act(s);
  }

  private dispatch(channel: string, payload: string | undefined) {
    let key: unknown;
    let keys: unknown;
    let data: Record<string, unknown> | undefined;
    try {
      ({ key, keys, ...data } = JSON.parse(payload ?? '') as { key?: unknown; keys?: unknown });
    } catch {
      // Not JSON: the payload is the key itself (pg-boss's new-job notifications carry the queue name).
      key = payload;
    }
    // `{keys: [...]}`: one notification for many keys (a worker's tick of chat streams, src/conversations/stream-batch.ts).
    const all = Array.isArray(keys) ? keys : [key];
    for (const one of all) if (typeof one === 'string') for (const s of [...(this.channels.get(channel)?.get(one) ?? [])]) s.changed(data);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    this.everySubscriber((s) => s.close());
    this.channels.clear();
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    this.listening.clear();
    if (client) {
      client.removeAllListeners();
      await this.db.client.destroyRawConnection(client).catch(() => undefined);
    }
  }
}

/** Channels are the code's own constants; refuse anything else rather than quote it. */
const channelName = (name: string) => {
  if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`notifications: "${name}" is not a channel name`);
  return name;
};

const hubs = new WeakMap<Db, NotificationHub>();

/** The process's hub for this database (one LISTEN connection however many waiters). */
export function notificationHub(db: Db, log: Logger): NotificationHub {
  let hub = hubs.get(db);
  if (!hub) {
    hub = new NotificationHub(db, log);
    hubs.set(db, hub);
  }
  return hub;
}

/** Closes the LISTEN connection and tells every waiter to give up (web process stop). */
export async function closeNotifications(db: Db): Promise<void> {
  await hubs.get(db)?.close();
  hubs.delete(db);
}

/** Subscribers waiting now in this process (0 when no hub was opened). */
export const waitingSubscribers = (db: Db, channel?: string): number => hubs.get(db)?.subscribers(channel) ?? 0;
