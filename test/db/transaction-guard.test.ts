import { expect } from 'chai';
import type { Knex } from 'knex';
import { createDb, type Db } from '../../src/db/knex.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { outsideTransaction, SecondConnectionError, setTransactionGuard, takeTransactionGuardViolations } from '../../src/db/transaction-guard.ts';
import { knexBossDb } from '../../src/jobs/boss-db.ts';
import { testDatabase } from '../support/hooks.ts';

const countUsers = async (db: Knex | Knex.Transaction) => Number((await db('users').count<{ count: number }[]>({ count: '*' }))[0]!.count);

describe('the transaction guard', () => {
  let db: Db;
  before(() => {
    // One connection: a statement that waited for a second one would wait out knex's acquire timeout.
    db = createDb(testDatabase().url, { max: 1 });
  });
  after(() => db.destroy());
  afterEach(() => {
    setTransactionGuard('throw');
    takeTransactionGuardViolations();
  });

  it('fails a statement on the root db inside inTransaction at once, naming the problem', async () => {
    const failure = await inTransaction(db, async () => countUsers(db)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.be.instanceOf(SecondConnectionError);
    expect((failure as Error).message).to.match(/second connection while this async context holds an open transaction/);
    expect(takeTransactionGuardViolations()).to.have.length(1);
  });

  it('lets every statement that runs on the transaction through, savepoints included', async () => {
    const counts = await inTransaction(db, async (trx) => {
      const first = await countUsers(trx);
      const nested = await trx.transaction((savepoint) => countUsers(savepoint));
      const joined = await inTransaction(trx, (same) => countUsers(same));
      return [first, nested, joined];
    });
    expect(counts[0]).to.be.a('number');
    expect(counts).to.deep.equal([counts[0], counts[0], counts[0]]);
    expect(takeTransactionGuardViolations()).to.deep.equal([]);
  });

  it('fails a second transaction and pg-boss on the shared pool opened inside one', async () => {
    const nested = await db
      .transaction(() => db.transaction((other) => countUsers(other)))
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(nested).to.be.instanceOf(SecondConnectionError);
    const boss = await db
      .transaction(() => knexBossDb(db).executeSql('SELECT 1'))
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(boss).to.be.instanceOf(SecondConnectionError);
    expect(takeTransactionGuardViolations()).to.have.length(2);
  });

  it('lets work started inside a transaction use the pool once it committed, or at once when it runs outside it', async () => {
    let afterCommit: Promise<number> | undefined;
    let notified: Promise<number> | undefined;
    await db.transaction(async (trx) => {
      // A follow-up the transaction does not wait for: it runs when the transaction has ended.
      afterCommit = new Promise((resolve) => setTimeout(resolve, 50)).then(() => countUsers(db));
      // Fire-and-forget: it waits for the pool's one connection, which the transaction frees at commit.
      notified = outsideTransaction(() => countUsers(db));
      await countUsers(trx);
    });
    expect(await afterCommit).to.be.a('number');
    expect(await notified).to.be.a('number');
    expect(takeTransactionGuardViolations()).to.deep.equal([]);
  });

  it('leaves another pool alone (it cannot be exhausted by this transaction)', async () => {
    const other = createDb(testDatabase().url, { max: 1 });
    try {
      expect(await db.transaction(() => countUsers(other))).to.be.a('number');
      expect(takeTransactionGuardViolations()).to.deep.equal([]);
    } finally {
      await other.destroy();
    }
  });

  it('in warn mode, logs each call site once and lets the statement through', async () => {
    const lines: string[] = [];
    setTransactionGuard('warn', (line) => lines.push(line));
    const wide = createDb(testDatabase().url, { max: 2 });
    try {
      const readTwice = () => wide.transaction(() => countUsers(wide));
      expect(await readTwice()).to.be.a('number');
      expect(await readTwice()).to.be.a('number');
      expect(lines).to.have.length(1);
      expect(lines[0]).to.match(/second connection while this async context holds an open transaction[\s\S]*transaction-guard\.test\.ts/);
      expect(takeTransactionGuardViolations()).to.deep.equal([]);
    } finally {
      await wide.destroy();
    }
  });

  it('checks nothing when off', async () => {
    setTransactionGuard('off');
    const wide = createDb(testDatabase().url, { max: 2 });
    try {
      expect(await wide.transaction(() => countUsers(wide))).to.be.a('number');
      expect(takeTransactionGuardViolations()).to.deep.equal([]);
    } finally {
      await wide.destroy();
    }
  });
});
