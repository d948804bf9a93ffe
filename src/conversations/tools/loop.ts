/**
 * A chat turn with tools, on the worker: model → tool calls (the calls of one round run in
 * parallel, each within CHAT_TOOL_TIMEOUT_MS) → model, for at most CHAT_TOOL_MAX_ROUNDS rounds,
 * then one last answer without tools. A tool's failure (bad arguments, an unknown tool, a refused
 * or failed paid call, a connector's error, a timeout) goes back to the model as the tool's result.
 * Each round is written as it happens — the assistant message with its calls, a row per call, the
 * tool messages — so a retried attempt resumes where the last one stopped, and a billed call it
 * had accepted is waited for, not made again.
 */
import { randomUUID } from 'node:crypto';
import { actorFor } from '../../access/index.ts';
import { failForGood, isUpstreamBusy, type JobContext } from '../../jobs/define.ts';
import { type ChatMessage, type ChatTool, type ChatToolCall, type ChatUsage, isChatServiceNotConfigured } from '../../providers/chat/index.ts';
import { creditsFor, estimateTokens, type TurnAnswer, type turnPricing } from '../run-pricing.ts';
import type { RunRow } from '../run-row.ts';
import { streamCoalescer } from '../stream-batch.ts';
import type { TurnPrompt } from '../context/turn.ts';
import { TurnBudget } from './budget.ts';
import { approvalExpiryJob } from '../jobs.ts';
import { awaitApproval, finishToolCall, loadToolCalls, recordRound, recordToolResults, type ToolCallRow, turnMessages } from './store.ts';
import { ToolError, type ToolContext, type TurnTool } from './types.ts';

/** A tool that ignores its deadline is given up on this long after it. */
const DEADLINE_GRACE_MS = 2_000;

/** The run's pricing with its prompt fitted to the window (../context/turn.ts): `refit` fits it again with the turn's rounds. */
type Pricing = Awaited<ReturnType<typeof turnPricing>> & Pick<TurnPrompt, 'refit'>;

const addUsage = (a: ChatUsage, b: ChatUsage): ChatUsage => ({
  input_tokens: a.input_tokens + b.input_tokens,
  output_tokens: a.output_tokens + b.output_tokens,
});

/** The tools as the model is offered them (name, description, JSON Schema of the arguments). */
export const offeredTools = (tools: ReadonlyMap<string, TurnTool>): ChatTool[] =>
  [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));

/** `tools`: the turn's tools (./catalog.ts `turnTools`), read once by the handler, which fits the prompt around them. */
export async function answerWithTools(job: JobContext, run: RunRow, pricing: Pricing, tools: ReadonlyMap<string, TurnTool>): Promise<TurnAnswer> {
  const { deps, signal, log } = job;
  // Independent reads, at once: they stand before the model's first token.
  const [mine, calls] = await Promise.all([turnMessages(deps.db, run), loadToolCalls(deps.db, run.id)]);
  const offered = offeredTools(tools);
  // The turn's own rounds so far; each request is the branch and these, fitted to the window again
  // (results grow a round at a time: oldest dropped, results cut, never a provider error for length).
  const rounds: ChatMessage[] = [...mine];
  let messages = pricing.refit(rounds);
  let usage: ChatUsage = { input_tokens: run.rounds_usage?.input_tokens ?? 0, output_tokens: run.rounds_usage?.output_tokens ?? 0 };
  let tail = run.tail_message_id ?? run.message_id;
  let round = calls.reduce((most, call) => Math.max(most, call.round), 0);
  const budget = new TurnBudget(
    run.max_credits,
    () => creditsFor(usage, pricing.prices),
    calls.reduce((sum, call) => sum + call.credits, 0),
  );
  const actor = actorFor(deps.db, { userId: run.user_id });
  // A round whose results were not all written yet (the last attempt stopped in it): its calls run (again, where unfinished).
  let pending = calls.filter((call) => call.round === round && call.message_id === null);

  // The text streams through the worker's coalescer (../stream-batch.ts): one write and one NOTIFY per tick for all its turns.
  const stream = streamCoalescer(deps).open(run, job.job);
  try {
    for (;;) {
      if (pending.length > 0) {
        const { waiting, approvals } = await runRound(job, run, pending, tools, { deps, actor, run, signal, budget });
        // Calls that need the caller's approval: the turn waits for the answers (./approvals.ts), which start its next job.
        if (approvals.length > 0) {
          await job.step(async (trx) => {
            await awaitApproval(trx, run, approvals, deps.config.CHAT_APPROVAL_TTL_SECONDS);
            await deps.jobs.enqueue(
              trx,
              approvalExpiryJob,
              { run_id: run.id },
              { organizationId: run.organization_id, startAfter: deps.config.CHAT_APPROVAL_TTL_SECONDS },
            );
          });
          return { answer: '', usage, suspended: true };
        }
        // A call waits for its own job (an image generation): this job ends holding no slot; that job's end continues the turn.
        if (waiting) return { answer: '', usage, suspended: true };
        const written = await job.step((trx) => recordToolResults(trx, run, tail!, round));
        tail = written.tail;
        rounds.push(...written.messages);
        messages = pricing.refit(rounds);
        pending = [];
      }
      const offer = offered.length > 0 && round < deps.config.CHAT_TOOL_MAX_ROUNDS && !budget.exhausted();
      let text = '';
      let asked: ChatToolCall[] = [];
      let roundUsage: ChatUsage | undefined;
      stream.restart();
      for await (const chunk of deps.providers.chat.stream({
        model: run.model,
        // The catalog's provider of the model: the chat provider routes the turn to it (sandbox or the HTTP service).
        provider: pricing.provider,
        messages,
        parameters: pricing.parameters,
        ...(offer && { tools: offered }),
        signal,
      })) {
        if ('delta' in chunk) {
          text += chunk.delta;
          // Waits only while this turn's unsent text is over its cap: the model is read no faster than it is written.
          await stream.publish(text);
        } else if ('tool_calls' in chunk) asked = chunk.tool_calls;
        else roundUsage = chunk.usage;
      }
      // A service that reported no usage: about four characters a token.
      usage = addUsage(
        usage,
        roundUsage ?? { input_tokens: messages.reduce((sum, m) => sum + estimateTokens(m.content), 0), output_tokens: estimateTokens(text) },
      );
      // No tools offered (rounds or credits used up): whatever the model asks for, this is the answer.
      if (!offer || asked.length === 0) return { answer: text, usage };
      round += 1;
      const recorded = await job.step((trx) => recordRound(trx, run, tail, round, text, asked, usage));
      tail = recorded.messageId;
      rounds.push({ role: 'assistant', content: text, tool_calls: asked });
      pending = recorded.rows;
    }
  } catch (error) {
    // A cancel or a lost lease: the runtime knows which, and this attempt writes nothing more.
    if (signal.aborted) throw error;
    // The model's service is at its limit (PROVIDER_LIMITS, a 429): the turn waits queued, on any attempt.
    if (isUpstreamBusy(error)) throw error;
    log.warn({ err: error, run_id: run.id }, 'chat run failed at the provider');
    // This worker has no service for the model (configured unlike the web process): no retry helps, as for generations.
    if (isChatServiceNotConfigured(error)) throw failForGood('refused', error.message, error);
    if (job.lastAttempt) throw failForGood('provider_failed', error instanceof Error ? error.message : String(error), error);
    throw error;
  } finally {
    stream.close();
  }
}

/**
 * The calls of one round, in parallel; each outcome is written as soon as it is known (followers
 * see it). Says whether a call waits for its own job, and which calls wait for the caller's approval.
 */
async function runRound(
  job: JobContext,
  run: RunRow,
  calls: readonly ToolCallRow[],
  tools: ReadonlyMap<string, TurnTool>,
  base: Omit<ToolContext, 'toolCallId' | 'meteredCallId' | 'deadline'>,
): Promise<{ waiting: boolean; approvals: string[] }> {
  const outcomes = await Promise.all(
    calls
      .filter((call) => call.status === 'running')
      .map(async (call) => {
        const tool = tools.get(call.name);
        if (tool?.needsApproval && call.approved !== true) return { call, outcome: 'approval' as const };
        const outcome = await runCall(call, tool, base, job.deps.config.CHAT_TOOL_TIMEOUT_MS);
        if (outcome !== 'wait') await job.step((trx) => finishToolCall(trx, run, call.id, outcome));
        return { call, outcome };
      }),
  );
  return {
    waiting: outcomes.some(({ outcome }) => outcome === 'wait'),
    approvals: outcomes.filter(({ outcome }) => outcome === 'approval').map(({ call }) => call.id),
  };
}

async function runCall(
  call: ToolCallRow,
  tool: TurnTool | undefined,
  base: Omit<ToolContext, 'toolCallId' | 'meteredCallId' | 'deadline'>,
  timeoutMs: number,
): Promise<{ status: 'succeeded' | 'failed'; result: string; credits: number } | 'wait'> {
  const failed = (message: string) => ({ status: 'failed' as const, result: message, credits: 0 });
  if (!tool) return failed(`no tool named "${call.name}" is offered in this turn`);
  let args: unknown;
  try {
    args = JSON.parse(call.arguments || '{}');
  } catch {
    return failed('arguments: are not valid JSON');
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return failed('arguments: must be a JSON object');
  const deadline = AbortSignal.timeout(timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ToolError(`${call.name}: no answer within ${timeoutMs} ms`)), timeoutMs + DEADLINE_GRACE_MS);
  });
  try {
    const context: ToolContext = { ...base, toolCallId: call.tool_call_id, meteredCallId: call.metered_call_id ?? randomUUID(), deadline };
    const outcome = await Promise.race([tool.run(args as Record<string, unknown>, context), late]);
    if ('wait' in outcome) return 'wait';
    return { status: 'succeeded', result: outcome.content, credits: outcome.credits };
  } catch (error) {
    if (base.signal.aborted) throw error;
    if (deadline.aborted && !(error instanceof ToolError)) return failed(`${call.name}: no answer within ${timeoutMs} ms`);
    return failed(error instanceof Error ? error.message : String(error));
  } finally {
    clearTimeout(timer);
  }
}
