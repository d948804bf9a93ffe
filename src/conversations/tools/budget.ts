import { ToolError } from './types.ts';

/**
 * A turn's `max_credits` covers the whole turn, tools included: a paid call may start only if the
 * model's credits so far, the tools' charges and the quotes of calls in flight leave room for its
 * quote (it is then accepted with the rest as its own `max_credits`); the answer's capture is
 * capped the same way (./credits.ts). Without `max_credits` nothing is capped here (each call holds
 * its own quote).
 */
export class TurnBudget {
  private inFlight = 0;

  private readonly maxCredits: number | null;
  private readonly modelCredits: () => number;
  private charged: number;
  constructor(
    maxCredits: number | null,
    /** Credits the model's usage so far costs. */
    modelCredits: () => number,
    charged: number,
  ) {
    this.maxCredits = maxCredits;
    this.modelCredits = modelCredits;
    this.charged = charged;
  }

  /** Credits still free; null when the turn has no ceiling. */
  left(): number | null {
    return this.maxCredits === null ? null : this.maxCredits - this.modelCredits() - this.charged - this.inFlight;
  }

  /** No credit left for anything more (the loop then asks for a last answer without tools). */
  exhausted(): boolean {
    const left = this.left();
    return left !== null && left <= 0;
  }

  /** Reserves a quote for a call; refused (a ToolError the model reads) when it does not fit. Returns what was left before it. */
  reserve(operation: string, quote: number): number | null {
    const left = this.left();
    if (left !== null && quote > left)
      throw new ToolError(
        `max_credits: ${operation} may cost ${quote} credits and the turn has ${Math.max(0, left)} of its ${this.maxCredits} left; the call was not made and nothing was charged`,
      );
    this.inFlight += quote;
    return left;
  }

  /** The reserved quote is settled with what the call was charged. */
  settle(quote: number, credits: number): void {
    this.inFlight -= quote;
    this.charged += credits;
  }
}
