import type { Db } from '../db/knex.ts';
import type { Caller } from '../core/caller.ts';

const MAX_REMEMBERED = 50_000;

/**
 * Just-in-time user rows: a token's `sub` becomes a user on first sight; `email` and `name` are
 * refreshed when they change. The process remembers, per user, the claims it last wrote, so a
 * request writes only when its claims differ from those (a new user to this process, or claims
 * that changed, back and forth too): an authenticated read costs no write.
 */
export class UserDirectory {
  /** User id → the email and name this process last made the row hold. */
  private readonly written = new Map<string, string>();

  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  async seen(caller: Caller): Promise<void> {
    const claims = `${caller.email ?? ''}\u0000${caller.name ?? ''}`;
    if (this.written.get(caller.userId) === claims) return;
    await this.db.raw(
      `INSERT INTO users (id, email, name) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET email = excluded.email, name = excluded.name, updated_at = now()
       WHERE users.email IS DISTINCT FROM excluded.email OR users.name IS DISTINCT FROM excluded.name`,
      [caller.userId, caller.email, caller.name],
    );
    this.written.delete(caller.userId);
    if (this.written.size >= MAX_REMEMBERED) this.written.delete(this.written.keys().next().value!);
    this.written.set(caller.userId, claims);
  }
}
