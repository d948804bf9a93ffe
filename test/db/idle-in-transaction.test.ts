import { expect } from 'chai';
import { createDb, eventually, isolatedDatabase } from '../jobs/support.ts';

/**
 * A worker's sessions end when they sit idle inside a transaction past WORKER_LOST_AFTER_SECONDS
 * (workers/main.ts): a worker frozen mid-transaction (SIGSTOP) is declared lost after that long
 * and its jobs retried elsewhere, and those retries must not wait on the row locks it still holds.
 */
describe('db: a session idle in a transaction past its limit', function () {
  this.timeout(30_000);
  let url: string;
  before(async () => {
    url = await isolatedDatabase();
  });

  it('is ended by PostgreSQL: its locks are freed, its writes rolled back, and the pool serves a fresh session', async () => {
    const frozen = createDb(url, { max: 1, applicationName: 'workspace-worker', idleInTransactionTimeoutMs: 500 });
    const other = createDb(url, { max: 1 });
    try {
      await other.raw('CREATE TABLE idle_probe (id int PRIMARY KEY, note text)');
      await other.raw("INSERT INTO idle_probe VALUES (1, 'before')");

      // A transaction that takes a row lock, writes, then stops talking (as a frozen process does).
      const trx = await frozen.transaction();
      await trx.raw("UPDATE idle_probe SET note = 'frozen write' WHERE id = 1");
      const locked = await other.raw('SELECT id FROM idle_probe WHERE id = 1 FOR UPDATE SKIP LOCKED');
      expect(locked.rows).to.deep.equal([]);

      await eventually('the row lock is freed', async () => {
        const { rows } = await other.raw('SELECT note FROM idle_probe WHERE id = 1 FOR UPDATE SKIP LOCKED');
        return rows.length === 1;
      });
      expect((await other.raw('SELECT note FROM idle_probe WHERE id = 1')).rows).to.deep.equal([{ note: 'before' }]);

      // The resumed transaction learns its session is gone; it cannot commit the write.
      const resumed = await trx.raw("UPDATE idle_probe SET note = 'late write' WHERE id = 1").then(
        () => 'wrote',
        (error: Error) => error.message,
      );
      expect(resumed).to.match(/idle-in-transaction|terminat|Connection/i);
      await trx.rollback().catch(() => undefined);
      expect((await other.raw('SELECT note FROM idle_probe WHERE id = 1')).rows).to.deep.equal([{ note: 'before' }]);

      // The pool drops the dead session and the same Db keeps working.
      const { rows } = await frozen.raw('SELECT 1 AS ok');
      expect(rows).to.deep.equal([{ ok: 1 }]);
    } finally {
      await frozen.destroy();
      await other.destroy();
    }
  });

  it('leaves sessions without the option alone', async () => {
    const db = createDb(url, { max: 1 });
    try {
      const { rows } = await db.raw('SHOW idle_in_transaction_session_timeout');
      expect(rows).to.deep.equal([{ idle_in_transaction_session_timeout: '0' }]);
      const limited = createDb(url, { max: 1, idleInTransactionTimeoutMs: 30_000 });
      try {
        expect((await limited.raw('SHOW idle_in_transaction_session_timeout')).rows).to.deep.equal([{ idle_in_transaction_session_timeout: '30s' }]);
      } finally {
        await limited.destroy();
      }
    } finally {
      await db.destroy();
    }
  });
});
