import { expect } from 'chai';
import { boundedWait, ContinueLater, isContinueLater } from '../../src/jobs/waits.ts';

/** An attempt's wait budget (src/jobs/waits.ts): short waits are slept through, the first past the budget continues the job instead. */
describe('jobs: bounded waits', () => {
  const signal = new AbortController().signal;
  const outcome = (promise: Promise<void>) =>
    promise.then(
      () => 'slept',
      (error: unknown) => error,
    );

  it('sleeps through waits while they fit the budget, then continues with the wait that does not fit', async () => {
    const wait = boundedWait(50, 'polling');
    expect(await outcome(wait(20, signal))).to.equal('slept');
    expect(await outcome(wait(30, signal))).to.equal('slept');
    const next = await outcome(wait(1500, signal));
    expect(isContinueLater(next)).to.equal(true);
    expect(next).to.be.instanceOf(ContinueLater).and.include({ seconds: 1.5, why: 'polling' });
  });

  it('with no budget continues at once, never later than the deadline it is given', async () => {
    const next = (await outcome(boundedWait(0, 'resumed', 2000)(60_000, signal))) as ContinueLater;
    expect(next).to.include({ seconds: 2 });
  });

  it('an abort while sleeping rejects with the signal’s reason', async () => {
    const controller = new AbortController();
    const reason = new Error('the job was canceled');
    const pending = outcome(boundedWait(10_000, 'polling')(5000, controller.signal));
    controller.abort(reason);
    expect(await pending).to.equal(reason);
  });
});
