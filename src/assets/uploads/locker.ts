import { type Lock, type Locker, MemoryLocker, type RequestRelease } from '@tus/server';
import type pg from 'pg';
import type { Db } from '../../db/knex.ts';

/** What @tus/server answers when the upload is locked elsewhere (tus servers answer 423 Locked; tus-js-client retries it). */
export const UPLOAD_LOCKED = { status_code: 423, body: 'the upload is locked: another request is writing to it' };

interface PooledClient {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<void>;
}

/**
 * The tus server's lock on an upload while a request writes to it, across web processes: a
 * Postgres session advisory lock per upload, so two processes can never append to the same upload
 * at once (the loser is answered 423 at once; by the time it retries, its offset is either free
 * or stale: 409). Within a process @tus/server's MemoryLocker goes first, keeping its rule: a new
 * request for an upload asks the one holding it to stop (a client resuming after its connection
 * dropped is not kept waiting by the dead request).
 *
 * All of a process's upload locks live on one pooled connection, taken while at least one is held
 * and given back when none is — a PATCH can last minutes, and one connection per PATCH would drain
 * the pool. A session lock ends with its session: should that connection fail, Postgres has let
 * the locks go, so the requests holding them are asked to stop.
 */
export class PostgresLocker implements Locker {
  private readonly memory = new MemoryLocker();
  private connection: pg.Client | null = null;
  /** Held locks: the upload id and how to ask its request to stop. */
  private readonly held = new Map<string, RequestRelease>();
  /** The session's lock and unlock statements, one after another (taking and giving back the connection between them). */
  private queue: Promise<unknown> = Promise.resolve();

  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  newLock(id: string): Lock {
    const inProcess = this.memory.newLock(id);
    return {
      lock: async (signal, requestRelease) => {
        await inProcess.lock(signal, requestRelease);
        try {
          if (!(await this.serially(() => this.take(id, requestRelease)))) throw UPLOAD_LOCKED;
        } catch (error) {
          await inProcess.unlock();
          throw error;
        }
      },
      unlock: async () => {
        try {
          await this.serially(() => this.release(id));
        } finally {
          await inProcess.unlock();
        }
      },
    };
  }

  private serially<T>(step: () => Promise<T>): Promise<T> {
    const run = this.queue.then(step);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async take(id: string, requestRelease: RequestRelease): Promise<boolean> {
    const connection = this.connection ?? (await this.connect());
    let locked = false;
    try {
      const { rows } = await connection.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', [lockName(id)]);
      locked = rows[0]!.locked;
    } finally {
      if (locked) this.held.set(id, requestRelease);
      else await this.giveBackIfIdle();
    }
    return locked;
  }

  private async release(id: string): Promise<void> {
    if (!this.held.delete(id) || !this.connection) return;
    // A failed unlock means the session is gone, and its locks with it.
    await this.connection.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockName(id)]).catch(() => undefined);
    await this.giveBackIfIdle();
  }

  private async connect(): Promise<pg.Client> {
    const connection = await (this.db.client as PooledClient).acquireConnection();
    this.connection = connection;
    connection.on('error', this.lost);
    return connection;
  }

  private async giveBackIfIdle(): Promise<void> {
    if (this.held.size || !this.connection) return;
    const connection = this.connection;
    this.connection = null;
    connection.off('error', this.lost);
    await (this.db.client as PooledClient).releaseConnection(connection);
  }

  /** The session ended under its locks: every request holding one is asked to stop writing. */
  private readonly lost = () => {
    const holders = [...this.held.values()];
    this.held.clear();
    const connection = this.connection;
    this.connection = null;
    connection?.off('error', this.lost);
    if (connection) void (this.db.client as PooledClient).releaseConnection(connection).catch(() => undefined);
    for (const requestRelease of holders) void Promise.resolve(requestRelease()).catch(() => undefined);
  };
}

const lockName = (uploadId: string) => `asset_uploads.patch:${uploadId}`;
