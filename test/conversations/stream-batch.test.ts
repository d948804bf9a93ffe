import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { StreamCoalescer } from '../../src/conversations/stream-batch.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { testConfig } from '../support/config.ts';

/**
 * The coalescer's bookkeeping (what each tick writes, the cap on a turn's unsent text), with a
 * database stand-in that records each statement and answers when told: its SQL against Postgres is
 * exercised end to end by ./run-streams.test.ts.
 */
describe('stream coalescer (one statement per tick for all turns; a bounded buffer per turn)', () => {
  const log = createLogger(testConfig(), 'test');
  const job = (n: number) => ({ name: 'conversation.chat-run.v1', id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, retryCount: 0 });
  const run = (n: number) => ({
    id: `10000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    conversation_id: `20000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  });

  /** Each statement's rows (run id, text, replace, epoch), answered by `answer(epochs by run id)`. */
  function fakeDb() {
    const statements: { rows: [string, string, boolean, number | null][]; answer: (epochs: Record<string, number>) => void }[] = [];
    let arrived: () => void = () => {};
    const db = {
      raw: (_sql: string, bindings: unknown[]) =>
        new Promise((resolve) => {
          const rows: [string, string, boolean, number | null][] = [];
          for (let i = 0; i + 7 <= bindings.length; i += 7) rows.push(bindings.slice(i, i + 4) as [string, string, boolean, number | null]);
          statements.push({ rows, answer: (epochs) => resolve({ rows: Object.entries(epochs).map(([id, stream_epoch]) => ({ id, stream_epoch })) }) });
          arrived();
        }),
    };
    const next = (count: number) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (statements.length >= count) resolve();
          else arrived = check;
        };
        check();
      });
    return { db: db as unknown as Db, statements, next };
  }
  const settled = async (promise: Promise<void>) => Promise.race([promise.then(() => true), new Promise((resolve) => setImmediate(() => resolve(false)))]);

  it('writes every turn’s new text in one statement per tick: a round’s first text replaces, the rest appends at its epoch', async () => {
    const { db, statements, next } = fakeDb();
    const coalescer = new StreamCoalescer({ db, log }, 5, 1_000);
    const turns = [1, 2, 3].map((n) => coalescer.open(run(n), job(n)));
    for (const [i, turn] of turns.entries()) await turn.publish(`Hello ${i}`);
    await next(1);
    expect(statements[0]!.rows).to.deep.equal([
      [run(1).id, 'Hello 0', true, null],
      [run(2).id, 'Hello 1', true, null],
      [run(3).id, 'Hello 2', true, null],
    ]);
    for (const [i, turn] of turns.entries()) await turn.publish(`Hello ${i}, world`);
    statements[0]!.answer({ [run(1).id]: 0, [run(2).id]: 4, [run(3).id]: 0 });
    await next(2);
    expect(statements[1]!.rows).to.deep.equal([
      [run(1).id, ', world', false, 0],
      [run(2).id, ', world', false, 4],
      [run(3).id, ', world', false, 0],
    ]);
    // A round restarted while its append was written: its next text replaces again.
    turns[0]!.restart();
    await turns[0]!.publish('Round two');
    // Run 3's append was refused (someone replaced its snapshot): its whole text replaces it in turn.
    statements[1]!.answer({ [run(1).id]: 0, [run(2).id]: 4 });
    await next(3);
    expect(statements[2]!.rows).to.deep.equal([
      [run(1).id, 'Round two', true, 0],
      [run(3).id, 'Hello 2, world', true, 0],
    ]);
    for (const turn of turns) turn.close();
    statements[2]!.answer({});
  });

  it('holds a turn’s model read while its unsent text is over the cap, and lets it go once written (or once the run is gone)', async () => {
    const { db, statements, next } = fakeDb();
    const coalescer = new StreamCoalescer({ db, log }, 5, 10);
    const turn = coalescer.open(run(1), job(1));
    expect(await settled(turn.publish('0123456789'))).to.equal(true);
    const over = turn.publish('0123456789abc');
    expect(await settled(over)).to.equal(false);
    await next(1);
    statements[0]!.answer({ [run(1).id]: 0 });
    expect(await over.then(() => true)).to.equal(true);

    const other = coalescer.open(run(2), job(2));
    const waiting = other.publish('x'.repeat(50));
    await next(2);
    expect(await settled(waiting)).to.equal(false);
    // Its replacing write changed nothing (the run ended, or the attempt lost its job): it streams no more.
    statements[1]!.answer({});
    expect(await waiting.then(() => true)).to.equal(true);
    expect(await settled(other.publish('x'.repeat(100)))).to.equal(true);
    turn.close();
  });
});
