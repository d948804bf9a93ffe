/**
 * Group commit in the process: concurrent calls of one autocommitted statement that name the same
 * key (e.g. an organization) coalesce into one statement per batch. A call made while nothing of
 * its key is in flight is sent at once, alone, as its own single statement (no added latency, no
 * batch overhead when idle); calls made while `batches` statements of their key are in flight wait
 * and then go together, up to `size` per statement. Each batch is one transaction with one commit,
 * so a hot row it locks is locked, and handed to the next waiting backend, once per batch instead
 * of once per call (src/credits/batches.ts; the design: TigerBeetle's batched transfers). Calls of
 * different keys never wait for each other here.
 *
 * `many` answers one output per input, in input order. A batch is all or nothing: when the server
 * refused the statement (an ERROR: it ran in its own transaction, which rolled back, so nothing of
 * it was written), each of its calls is sent again alone, so one bad call fails only itself. Any
 * other failure (a connection lost before the answer: the commit may or may not have happened) is
 * every call's failure; resending could write twice.
 */
interface Call<Input, Output> {
  input: Input;
  resolve: (output: Output) => void;
  reject: (error: unknown) => void;
}

interface Lane<Input, Output> {
  waiting: Call<Input, Output>[];
  inFlight: number;
}

export interface BatchStatements<Input, Output> {
  /** One call alone. */
  one(input: Input): Promise<Output>;
  /** Several calls in one statement: one output per input, in input order. */
  many(inputs: readonly Input[]): Promise<Output[]>;
}

export class StatementBatches<Input, Output> {
  readonly #lanes = new Map<string, Lane<Input, Output>>();

  private readonly statements: BatchStatements<Input, Output>;
  private readonly limits: { batches: number; size: number };
  constructor(statements: BatchStatements<Input, Output>, limits: { batches: number; size: number } = { batches: 2, size: 64 }) {
    this.statements = statements;
    this.limits = limits;
  }

  run(key: string, input: Input): Promise<Output> {
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { waiting: [], inFlight: 0 };
      this.#lanes.set(key, lane);
    }
    const promise = new Promise<Output>((resolve, reject) => lane.waiting.push({ input, resolve, reject }));
    this.#next(key, lane);
    return promise;
  }

  #next(key: string, lane: Lane<Input, Output>): void {
    while (lane.inFlight < this.limits.batches && lane.waiting.length > 0) {
      const batch = lane.waiting.splice(0, this.limits.size);
      lane.inFlight++;
      void this.#send(batch).finally(() => {
        lane.inFlight--;
        this.#next(key, lane);
        if (lane.inFlight === 0 && lane.waiting.length === 0) this.#lanes.delete(key);
      });
    }
  }

  async #send(batch: Call<Input, Output>[]): Promise<void> {
    if (batch.length === 1) return this.#sendOne(batch[0]!);
    try {
      const outputs = await this.statements.many(batch.map((call) => call.input));
      if (outputs.length !== batch.length) throw new Error(`a batch of ${batch.length} answered ${outputs.length} rows`);
      for (const [i, call] of batch.entries()) call.resolve(outputs[i]!);
    } catch (error) {
      if (!refusedByServer(error)) {
        for (const call of batch) call.reject(error);
        return;
      }
      await Promise.all(batch.map((call) => this.#sendOne(call)));
    }
  }

  #sendOne(call: Call<Input, Output>): Promise<void> {
    return this.statements.one(call.input).then(call.resolve, call.reject);
  }
}

/** An ERROR the server reported for the statement (pg's DatabaseError), as opposed to a lost connection or a FATAL one. */
function refusedByServer(error: unknown): boolean {
  const { severity, code } = (error ?? {}) as { severity?: unknown; code?: unknown };
  return severity === 'ERROR' && typeof code === 'string' && !code.startsWith('08') && !code.startsWith('57P');
}
