import { randomUUID } from 'node:crypto';
import { type Db as IDatabase, fromKnex, type PgBoss, type SendOptions } from 'pg-boss';
import type { Tx } from '../db/knex.ts';
import type { z } from 'zod';
import type { JobDefinition, JobEnds, PayloadOf, RunnableJob } from './define.ts';
import { currentRequestId, stamp } from './origin.ts';
import { affected } from './boss.ts';
import { JobCommands } from './commands.ts';
import { keepingClaims, notifyBatch } from './boss-sql/index.ts';

/** Whom a job works for: every call site says so (`null` for the platform's own jobs). */
export interface EnqueueOptions extends Pick<SendOptions, 'startAfter' | 'priority' | 'id'> {
  organizationId: string | null;
  /** A job to send when this one ends, in the transaction that ends it (src/jobs/origin.ts Continuation). */
  continueWith?: { job: JobDefinition; payload: object } | undefined;
  /** The pg-boss group its concurrency is counted in, instead of its organization (webhook deliveries: their endpoint). */
  group?: string | undefined;
}

const continuationFor = (then: NonNullable<EnqueueOptions['continueWith']>) => ({
  queue: then.job.name,
  payload: then.job.payload.parse(then.payload) as object,
});

/**
 * Sends jobs through pg-boss on the caller's own knex transaction, so a job exists exactly when
 * the state change that caused it commits (a rolled-back request leaves no job behind). Each job
 * records its organization (pg-boss's group) and the request that enqueued it (src/jobs/origin.ts).
 */
export class JobQueue {
  private readonly byQueue: ReadonlyMap<string, RunnableJob>;

  /** `definitions`: every job type of the platform, bound to its code (src/app/jobs.ts), for the console (redaction, searchable fields). */
  private readonly boss: PgBoss;
  readonly definitions: readonly RunnableJob[];
  constructor(boss: PgBoss, definitions: readonly RunnableJob[] = []) {
    this.boss = boss;
    this.definitions = definitions;
    this.byQueue = new Map(definitions.flatMap((job) => [[job.name, job] as const, [job.deadLetter, job] as const]));
  }

  /** The job type working `queue` (or whose dead letters `queue` holds). */
  definition(queue: string): RunnableJob | undefined {
    return this.byQueue.get(queue);
  }

  /** The ends `definition` is bound to (src/app/jobs.ts): to end a resource whose job is gone as its job's end would. */
  async endsOf<P extends z.ZodType>(definition: JobDefinition<P>): Promise<JobEnds<z.output<P>, unknown>> {
    const ends = await this.byQueue.get(definition.name)?.ends?.();
    if (!ends) throw new Error(`${definition.name} is bound to no ends`);
    return ends as JobEnds<z.output<P>, unknown>;
  }

  /** Readiness: pg-boss's schema is installed and answering. */
  async isReady(): Promise<boolean> {
    return (await this.boss.schemaVersion()) !== null;
  }

  async enqueue<J extends JobDefinition>(
    trx: Tx,
    job: J,
    payload: PayloadOf<J>,
    { organizationId, continueWith, group, ...options }: EnqueueOptions,
  ): Promise<string> {
    const continuation = continueWith && continuationFor(continueWith);
    const data = stamp(job.payload.parse(payload) as object, {
      requestId: currentRequestId(),
      continueWith: continuation,
      groupedElsewhere: group && organizationId,
    });
    const groupId = group ?? organizationId;
    const id = await this.boss.send(job.name, data, { ...options, ...(groupId && { group: { id: groupId } }), db: fromKnex(trx) });
    if (!id) throw new Error(`pg-boss refused a ${job.name} job`);
    return id;
  }

  /**
   * The statement that sends this job, as pg-boss writes it (its SQL and its one parameter), not run,
   * and the one that deletes it again (its parameters: the queue's name and an array of the id): for
   * a caller that runs them inside a statement of its own (EXECUTE in a function), so that the job
   * commits with that statement's other writes in one round trip, or not at all (a metered read's
   * accept: src/metering/accept.ts). The job's id is chosen here and returned.
   */
  async sendStatement<J extends JobDefinition>(
    job: J,
    payload: PayloadOf<J>,
    { organizationId }: Pick<EnqueueOptions, 'organizationId'>,
  ): Promise<{ id: string; sql: string; value: string; unsendSql: string }> {
    const id = randomUUID();
    const data = stamp(job.payload.parse(payload) as object, { requestId: currentRequestId() });
    const written: { sql: string; values: unknown[] }[] = [];
    const capture: IDatabase = {
      executeSql: async (sql, values) => {
        written.push({ sql, values: values ?? [] });
        return { rows: [{ id, count: '1', ids: [id] }] };
      },
    };
    await this.boss.send(job.name, data, { id, ...(organizationId && { group: { id: organizationId } }), db: capture });
    await this.boss.deleteJob(job.name, id, { db: capture });
    const [send, unsend] = written;
    const takes = (sql: string, n: number) => new RegExp(`\\$${n}\\b`).test(sql) && !new RegExp(`\\$${n + 1}\\b`).test(sql);
    if (written.length !== 2 || !takes(send!.sql, 1) || !takes(unsend!.sql, 2) || unsend!.values[0] !== job.name)
      throw new Error(`pg-boss wrote no statements of the expected shape to send and delete a ${job.name} job`);
    return { id, sql: send!.sql, value: String(send!.values[0]), unsendSql: unsend!.sql };
  }

  /** Many jobs of one kind in one statement (pg-boss `insert`), on the caller's transaction: for batches (the dispatcher's runs, their chat turns). */
  async enqueueMany<J extends JobDefinition>(
    trx: Tx,
    job: J,
    jobs: readonly ({ payload: PayloadOf<J> } & Pick<EnqueueOptions, 'organizationId' | 'continueWith' | 'group'>)[],
  ): Promise<void> {
    if (jobs.length === 0) return;
    const requestId = currentRequestId();
    await this.boss.insert(
      job.name,
      jobs.map(({ payload, organizationId, continueWith, group }) => ({
        data: stamp(job.payload.parse(payload) as object, {
          requestId,
          continueWith: continueWith && continuationFor(continueWith),
          groupedElsewhere: group && organizationId,
        }),
        ...((group ?? organizationId) && { group: { id: (group ?? organizationId)! } }),
      })),
      { db: fromKnex(trx) },
    );
    // pg-boss NOTIFYs once per insert (one slot per worker wakes): the workers' slot waker learns of the rest.
    if (jobs.length > 1) await notifyBatch(trx, job.name, jobs.length - 1);
  }

  // An attempt's own end, fenced to it (id and retry count): a lost lease changes nothing (returns false).

  /** Completes the attempt on the caller's transaction, beside its resource's `succeeded` end. */
  async completeAttempt(trx: Tx, queue: string, attempt: { id: string; retryCount: number }, output: object | null = null): Promise<boolean> {
    return affected(await this.boss.complete(queue, attempt, output ?? undefined, { db: fromKnex(trx) })) === 1;
  }

  /** Fails the attempt on the caller's transaction: retried if retries remain, else `failed` with a dead-letter copy. */
  async failAttempt(trx: Tx, queue: string, attempt: { id: string; retryCount: number }, error: object): Promise<boolean> {
    return affected(await this.boss.fail(queue, attempt, error, { db: keepingClaims(fromKnex(trx)) })) === 1;
  }

  // Operator commands (the job console), each on the caller's transaction so the audit record commits with it: ./commands.ts.
  #commands: JobCommands | undefined;

  /** The console's commands, with their outcomes per job (retry and redrive of one failure exclude each other). */
  get commands(): JobCommands {
    this.#commands ??= new JobCommands(this.boss);
    return this.#commands;
  }

  /** Failed jobs get one more attempt (their dead letters are cancelled). Returns how many changed (jobs in another state, or already redriven, are left alone). */
  async retryFailed(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return (await this.commands.retryFailed(trx, queue, ids)).done.length;
  }

  /** Cancelled jobs are queued again. */
  async resumeCancelled(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return this.commands.resumeCancelled(trx, queue, ids);
  }

  /** Queued or running → cancelled (a running attempt's completion then changes nothing). */
  async cancel(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return this.commands.cancel(trx, queue, ids);
  }

  async remove(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return this.commands.remove(trx, queue, ids);
  }

  /** Moves these dead letters back to the queue they failed on, unless their failed job was retried instead. Returns how many moved. */
  async redrive(trx: Tx, deadLetterQueue: string, ids: readonly string[]): Promise<number> {
    return (await this.commands.redrive(trx, deadLetterQueue, ids)).done.length;
  }

  /** An operator's "trigger now" of a cron job: marked so a paused schedule still runs it. */
  async trigger(trx: Tx, job: JobDefinition, triggeredBy: string): Promise<string> {
    const data = stamp({}, { requestId: currentRequestId(), triggeredBy });
    const id = await this.boss.send(job.name, data, { db: fromKnex(trx) });
    if (!id) throw new Error(`pg-boss refused a ${job.name} job`);
    return id;
  }
}
