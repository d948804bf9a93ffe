// Worker side of a metered call (loaded by the `handler` of meteredCallJob in ./jobs.ts).
import { isReadFailure } from '../core/read-failure.ts';
import type { JobContext } from '../jobs/define.ts';
import { type CallRow, isOpen, loadCall, startCall } from './calls.ts';
import type { MeteredCallPayload } from './jobs.ts';
import { chargeOf } from './operation.ts';
import { type CallOutcome, settleCall } from './settle.ts';

/** How often a running call looks whether it was settled meanwhile (the caller hung up or timed out), to abort the provider call. */
const WATCH_MS = 500;

export async function performCall({ call_id }: MeteredCallPayload, { deps, log, signal, lastAttempt }: JobContext): Promise<void> {
  const call = await startCall(deps.db, call_id);
  if (!call) return; // settled already (a hang-up, a timeout, or an earlier attempt)
  const operation = deps.reads.get(call.operation);
  if (!operation) return void (await settle(call, { status: 'failed', error: { code: 'failed', message: `no operation named ${call.operation}` } }));

  // The read's whole budget counts from when it was accepted, so a retried attempt does not restart it.
  const budget = deps.config.READ_TIMEOUT_MS - (Date.now() - call.created_at.getTime());
  if (budget <= 0) return void (await settle(call, { status: 'failed', error: { code: 'timeout', message: 'the read ran out of time before it started' } }));
  const controller = new AbortController();
  const timeout = AbortSignal.timeout(budget);
  const abort = (reason: unknown) => controller.abort(reason);
  const onJobAbort = () => abort(signal.reason);
  const onTimeout = () => abort(timeout.reason);
  signal.addEventListener('abort', onJobAbort);
  timeout.addEventListener('abort', onTimeout);
  let settledElsewhere = false;
  const watch = setInterval(() => {
    void loadCall(deps.db, call.id).then(
      (row) => {
        if (row && !isOpen(row)) {
          settledElsewhere = true;
          abort(new Error('the call was settled by the web process'));
        }
      },
      () => undefined,
    );
  }, WATCH_MS);

  let outcome: CallOutcome;
  try {
    const input = operation.input.parse(call.input);
    const answer = await operation.perform(input, { deps, signal: controller.signal, maxPages: call.quoted_pages });
    const parsed = operation.output.safeParse(answer.result);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `result.${issue.path.join('.')}: ` : '';
      log.warn({ call_id, operation: call.operation, issues: parsed.error.issues.slice(0, 5) }, 'provider answered a malformed result');
      outcome = {
        status: 'failed',
        error: { code: 'malformed', message: `the provider answered a malformed result (${where}${issue?.message ?? 'invalid'})` },
      };
    } else {
      outcome = { status: 'succeeded', result: parsed.data, pages: answer.pages, credits: chargeOf(operation, call.quoted_pages, answer.pages) };
    }
  } catch (error) {
    if (settledElsewhere) return;
    if (timeout.aborted)
      outcome = { status: 'failed', error: { code: 'timeout', message: `the provider did not answer within ${deps.config.READ_TIMEOUT_MS} ms` } };
    else if (isReadFailure(error)) outcome = { status: 'failed', error: { code: error.kind, message: error.message } };
    else if (signal.aborted || !lastAttempt)
      throw error; // worker stopping or a bug: the job is retried
    else outcome = { status: 'failed', error: { code: 'failed', message: error instanceof Error ? error.message : String(error) } };
  } finally {
    clearInterval(watch);
    signal.removeEventListener('abort', onJobAbort);
    timeout.removeEventListener('abort', onTimeout);
  }
  await settle(call, outcome);

  async function settle(row: CallRow, result: CallOutcome) {
    const settled = await settleCall(deps, row.id, result);
    log.info({ call_id, operation: row.operation, status: settled.status, credits_charged: settled.credits_charged }, 'metered call settled');
  }
}
