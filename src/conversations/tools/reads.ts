// The catalog's metered reads (social operations, web search, read_url) as tools: billed through
// the metering path under the turn's run lock, with the turn's attribution.
import { callAndAwait, describeOperation, quoteOf, type ReadOperation } from '../../metering/index.ts';
import { ToolError, type TurnTool } from './types.ts';

/** A zod issue as the model should read it: where, and what is wrong. */
const issueText = (issue: { path: PropertyKey[]; message: string }) => `${issue.path.length ? `${issue.path.map(String).join('.')}: ` : ''}${issue.message}`;

export function readTool(operation: ReadOperation): TurnTool {
  const descriptor = describeOperation(operation);
  return {
    name: operation.name,
    description: `${operation.description} (Billed: ${operation.price.per_request} credits a call${operation.price.per_page ? ` + ${operation.price.per_page} a result page` : ''}.)`,
    parameters: descriptor.input_schema,
    async run(args, { deps, actor, run, toolCallId, meteredCallId, signal, deadline, budget }) {
      const parsed = operation.input.safeParse(args);
      if (!parsed.success) throw new ToolError(`arguments: ${parsed.error.issues.slice(0, 3).map(issueText).join('; ')}`);
      const quote = quoteOf(operation, parsed.data);
      const left = budget.reserve(operation.name, quote.credits);
      let charged = 0;
      try {
        const call = await callAndAwait(
          deps,
          actor,
          operation,
          {
            organization_id: run.organization_id,
            ...(left !== null && { max_credits: Math.max(1, left) }),
            tool_call_id: toolCallId,
            conversation_id: run.conversation_id,
            message_id: run.message_id,
            run_lock: true,
          },
          parsed.data,
          { id: meteredCallId, signal, deadline },
        );
        if (call.status !== 'succeeded') {
          const error = call.error ?? { code: 'failed', message: 'the read did not complete' };
          throw new ToolError(`${operation.name}: ${error.message} (${error.code}); nothing was charged`);
        }
        charged = call.credits_charged ?? 0;
        return { content: JSON.stringify(call.result), credits: charged };
      } finally {
        budget.settle(quote.credits, charged);
      }
    },
  };
}
