import { expect } from 'chai';
import { StatementBatches } from '../../src/db/batches.ts';

/**
 * The coalescing rules of `StatementBatches`, with statements whose answers the test releases by
 * hand (what they send is recorded; the SQL behind them is tested in test/credits/batches.test.ts).
 */
function statements() {
  const sent: string[][] = [];
  const pending: { inputs: string[]; answer: (error?: unknown) => void }[] = [];
  const send = (inputs: string[]) =>
    new Promise<string[]>((resolve, reject) => {
      sent.push(inputs);
      pending.push({ inputs, answer: (error) => (error ? reject(error) : resolve(inputs.map((input) => `done ${input}`))) });
    });
  return {
    sent,
    pending,
    one: (input: string) => send([input]).then(([output]) => output!),
    many: (inputs: readonly string[]) => send([...inputs]),
  };
}

const refused = Object.assign(new Error('insert or update violates a foreign key'), { severity: 'ERROR', code: '23503' });
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('StatementBatches', () => {
  it('sends a call alone while nothing of its key is in flight, and the calls made meanwhile together, in order', async () => {
    const s = statements();
    const batches = new StatementBatches(s, { batches: 1, size: 64 });
    const first = batches.run('org-a', 'a1');
    const rest = ['a2', 'a3', 'a4'].map((input) => batches.run('org-a', input));
    await tick();
    expect(s.sent).to.deep.equal([['a1']]);
    s.pending.shift()!.answer();
    expect(await first).to.equal('done a1');
    await tick();
    expect(s.sent).to.deep.equal([['a1'], ['a2', 'a3', 'a4']]);
    s.pending.shift()!.answer();
    expect(await Promise.all(rest)).to.deep.equal(['done a2', 'done a3', 'done a4']);
  });

  it('never makes one key wait for another, and caps a batch at its size', async () => {
    const s = statements();
    const batches = new StatementBatches(s, { batches: 1, size: 2 });
    const calls = [batches.run('org-a', 'a1'), batches.run('org-b', 'b1'), batches.run('org-a', 'a2'), batches.run('org-a', 'a3'), batches.run('org-a', 'a4')];
    await tick();
    expect(s.sent).to.deep.equal([['a1'], ['b1']]);
    s.pending.shift()!.answer();
    await tick();
    expect(s.sent.slice(2)).to.deep.equal([['a2', 'a3']]);
    while (s.pending.length > 0) {
      s.pending.shift()!.answer();
      await tick();
    }
    expect(s.sent.slice(3)).to.deep.equal([['a4']]);
    expect(await Promise.all(calls)).to.deep.equal(['done a1', 'done b1', 'done a2', 'done a3', 'done a4']);
  });

  it('sends each call of a batch the server refused again alone, so only the bad one fails', async () => {
    const s = statements();
    const batches = new StatementBatches(s, { batches: 1, size: 64 });
    const calls = ['a1', 'a2', 'bad', 'a3'].map((input) => batches.run('org-a', input).catch((error: Error) => error));
    await tick();
    s.pending.shift()!.answer();
    await tick();
    expect(s.sent[1]).to.deep.equal(['a2', 'bad', 'a3']);
    s.pending.shift()!.answer(refused);
    await tick();
    expect(s.sent.slice(2)).to.deep.equal([['a2'], ['bad'], ['a3']]);
    for (const { inputs, answer } of s.pending.splice(0)) answer(inputs[0] === 'bad' ? refused : undefined);
    expect(await Promise.all(calls)).to.deep.equal(['done a1', 'done a2', refused, 'done a3']);
  });

  it('fails every call of a batch whose connection was lost, and sends none of them again (the commit may have happened)', async () => {
    const s = statements();
    const batches = new StatementBatches(s, { batches: 1, size: 64 });
    const lost = Object.assign(new Error('Connection terminated unexpectedly'), {});
    const calls = ['a1', 'a2', 'a3'].map((input) => batches.run('org-a', input).catch((error: Error) => error));
    await tick();
    s.pending.shift()!.answer();
    await tick();
    s.pending.shift()!.answer(lost);
    expect(await Promise.all(calls)).to.deep.equal(['done a1', lost, lost]);
    expect(s.sent).to.deep.equal([['a1'], ['a2', 'a3']]);
  });
});
