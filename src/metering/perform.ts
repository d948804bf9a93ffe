// Worker side of a metered call (loaded by the `handler` of meteredCallJob in ./jobs.ts): perform
// the read and validate it; the runtime then settles the call through ./ends.ts.
import { isReadFailure } from '../core/read-failure.ts';
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import { startCall } from './calls.ts';
import { attemptOwnsJob } from '../jobs/boss-sql/index.ts';
import type { MeteredCallPayload } from './jobs.ts';
import { chargeOf } from './operation.ts';

/** What a performed read hands its `succeeded` end: the validated result and what it cost. */
export interface PerformedCall {
  result: unknown;
  pages: number;
  credits: number;
}

export async function performCall({ call_id }: MeteredCallPayload, { deps, job, log, signal }: JobContext): Promise<PerformedCall | NothingToDo> {
  // One statement fenced to this attempt (not a step's four round trips): marking the call running is
  // harmless should the lease be lost right after, and the result is written under the lease anyway.
  const call = await startCall(deps.db, call_id, attemptOwnsJob({ queue: job.name, id: job.id, attempt: job.retryCount }));
  if (!call) return nothingToDo('the call was settled already (a hang-up, a timeout, or an earlier attempt)');
  const operation = deps.reads.get(call.operation);
  if (!operation) throw failForGood('failed', `no operation named ${call.operation}`);

  // The read's whole budget counts from when it was accepted, so a retried attempt does not restart it.
  const budget = deps.config.READ_TIMEOUT_MS - (Date.now() - call.created_at.getTime());
  if (budget <= 0) throw failForGood('timeout', 'the read ran out of time before it started');
  const timeout = AbortSignal.timeout(budget);
  try {
    const input = operation.input.parse(call.input);
    const answer = await operation.perform(input, { deps, signal: AbortSignal.any([signal, timeout]), maxPages: call.quoted_pages });
    const parsed = operation.output.safeParse(answer.result);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `result.${issue.path.join('.')}: ` : '';
      log.warn({ call_id, operation: call.operation, issues: parsed.error.issues.slice(0, 5) }, 'provider answered a malformed result');
      throw failForGood('malformed', `the provider answered a malformed result (${where}${issue?.message ?? 'invalid'})`);
    }
    return { result: parsed.data, pages: answer.pages, credits: chargeOf(operation, call.quoted_pages, answer.pages) };
  } catch (error) {
    // A cancel or a lost lease surfaces as whatever the provider threw on abort: the runtime knows which.
    if (signal.aborted) throw error;
    if (timeout.aborted) throw failForGood('timeout', `the provider did not answer within ${deps.config.READ_TIMEOUT_MS} ms`, error);
    if (isReadFailure(error)) throw failForGood(error.kind, error.message, error);
    throw error;
  }
}
