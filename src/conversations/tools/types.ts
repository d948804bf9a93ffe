import type { Actor } from '../../access/index.ts';
import type { Deps } from '../../platform/deps.ts';
import type { RunRow } from '../run-row.ts';
import type { TurnBudget } from './budget.ts';

/** What a tool gets besides its arguments. */
export interface ToolContext {
  deps: Deps;
  /** The turn's caller (who pays): tools act with their access. */
  actor: Actor;
  run: RunRow;
  /** The model's id of the call: recorded on the ledger rows of what it costs. */
  toolCallId: string;
  /** The id of the metered call that bills it, chosen before it is accepted (a retried turn waits for that call instead of paying twice). */
  meteredCallId: string;
  /** The turn's: aborted when it is stopped or its attempt loses its job. */
  signal: AbortSignal;
  /** The call's own time limit. */
  deadline: AbortSignal;
  budget: TurnBudget;
}

/** A tool's answer to the model (text) and the credits it cost; or `wait`: a job of its own answers later, and the turn continues when it ends. */
export type ToolOutcome = { content: string; credits: number } | { wait: true };

/** A tool offered to the model: `parameters` is the JSON Schema of its arguments. Failing, it throws: the message goes back to the model. */
export interface TurnTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** The caller approves or rejects each call before it runs (the turn waits, holding no worker slot). */
  needsApproval?: boolean;
  run(args: Record<string, unknown>, context: ToolContext): Promise<ToolOutcome>;
}

/** A tool's failure, said to the model as the tool's result. */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}
