import type { Db } from '../db/knex.ts';
import type { Caller } from '../core/caller.ts';

const REFRESH_AFTER_MS = 5 * 60_000;
const MAX_REMEMBERED = 50_000;

/**
 * Just-in-time user rows: a token's `sub` becomes a user on first sight; `email` and `name` are
 * refreshed when they change. Recently seen identities skip the write entirely.
 */
export class UserDirectory {
  private readonly recent = new Map<string, number>();

  constructor(private readonly db: Db) {}

  async seen(caller: Caller): Promise<void> {
    const key = `${caller.userId}\u0000${caller.email ?? ''}\u0000${caller.name ?? ''}`;
    const at = this.recent.get(key);
    if (at !== undefined && Date.now() - at < REFRESH_AFTER_MS) return;
    await this.db.raw(
      `INSERT INTO users (id, email, name) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET email = excluded.email, name = excluded.name, updated_at = now()
       WHERE users.email IS DISTINCT FROM excluded.email OR users.name IS DISTINCT FROM excluded.name`,
      [caller.userId, caller.email, caller.name],
    );
    if (this.recent.size >= MAX_REMEMBERED) this.recent.delete(this.recent.keys().next().value!);
    this.recent.set(key, Date.now());
  }
}
