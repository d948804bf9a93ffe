import type { Knex } from 'knex';
import type { Job } from 'pg-boss';
import type { z } from 'zod';
import type { Config } from '../config/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Deps } from '../platform/deps.ts';
import type { Logger } from '../platform/logger.ts';
import { unstamp } from './origin.ts';

/** Retry, expiry and retention of a queue; every job of the queue inherits it. */
export interface QueuePolicy {
  retryLimit: number;
  retryDelaySeconds: number;
  retryBackoff: boolean;
  retryDelayMaxSeconds?: number;
  /** How long one attempt may run before pg-boss gives up on it (a live but stuck handler). */
  expireInSeconds: number;
  /**
   * The one liveness signal of a running attempt: its worker refreshes the job's heartbeat every
   * `heartbeatSeconds / 2`, and pg-boss's monitor fails an attempt whose heartbeat is older than
   * this (≥ 10), so a dead worker's job is retried within seconds instead of after
   * `expireInSeconds`. `null`: no heartbeat.
   */
  heartbeatSeconds: number | null;
  /** Keep finished jobs this long so operators can inspect them. */
  deleteAfterSeconds: number;
}

/** Why a job ended without success, as its resource records it (`code` is snake_case, `message` says it to a person). */
export interface EndReason {
  code: string;
  message: string;
}

/** What the runtime hands a job kind's ends besides the payload. */
export interface EndContext {
  deps: Deps;
  /** `null` when a resource whose job is gone (deleted by an operator) is ended directly. */
  jobId: string | null;
}

/** A job end's step after its commit (see `JobEnds.succeeded`). */
export type AfterCommit = () => Promise<unknown>;

/**
 * What a job kind's resource becomes on each end of its job, applied by the runtime in the very
 * transaction that changes the job's state — so a record is never left `running` or credits held
 * after its job ended, and nothing is settled twice. Each must be conditional on the resource still
 * being open (a later end of the same job, e.g. after an operator's retry, changes nothing settled).
 * - `succeeded`: the handler's result, with the job's completion (a lost lease commits neither);
 * - `failed`: no retry follows — the handler failed on its last attempt or for good, the attempt
 *   expired, or its worker was lost on the last try (`reason.code` says which: `expired`, `lost`, …);
 * - `canceled`: the API or an operator canceled the job, queued or running.
 */
export interface JobEnds<Payload, Result> {
  // Method syntax: a kind's ends stay assignable to the erased RunnableJob of the job list (parameter bivariance).
  /**
   * May return a step to run right after the ending transaction commits, outside any transaction:
   * work the end decided and journaled in that transaction, e.g. a credit capture posted by its own
   * one-statement transaction so the organization's balance is not locked until this COMMIT. A crash
   * (or an error) before it runs must lose nothing: whoever comes next completes it from the journal.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: most ends return nothing (async functions typed Promise<void>)
  succeeded?(trx: Knex.Transaction, payload: Payload, result: Result, context: EndContext): Promise<void | AfterCommit>;
  failed(trx: Knex.Transaction, payload: Payload, reason: EndReason, context: EndContext): Promise<void>;
  canceled(trx: Knex.Transaction, payload: Payload, reason: EndReason, context: EndContext): Promise<void>;
  /**
   * An operator retries the failed job (or redrives its dead letter): put its resource back in
   * progress for one more attempt, in that transaction, and say true. A kind without it (or saying
   * false) refuses the retry — its resource ended with the failure (e.g. a generation's credits were
   * released), so the work is started anew instead.
   */
  reopen?(trx: Knex.Transaction, payload: Payload, context: EndContext): Promise<boolean>;
}

/** What a handler gets besides its payload. */
export interface JobContext {
  deps: Deps;
  job: Job<unknown>;
  log: Logger;
  /**
   * Aborted when the job is canceled (API or operator, delivered through NOTIFY), its lease is lost
   * (expired, heartbeat lost, retried elsewhere) or the worker stops: long work gives up at once.
   */
  signal: AbortSignal;
  /** No retry follows this attempt. */
  lastAttempt: boolean;
  /**
   * Runs `work` in one transaction that holds this attempt's lease (the job row locked and checked
   * to be this attempt's): an attempt that lost its lease writes nothing and stops with LeaseLost.
   * Each step that creates or charges something belongs in one, recording what it made, so a retry
   * after a crash at any line does each thing once.
   */
  step<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T>;
}

/**
 * Runs one attempt and returns its result (handed to the kind's `succeeded` end). It must be
 * idempotent: an attempt cut short (worker killed, expiry) is retried with the same payload. It
 * throws to be retried, `failForGood(…)` to end the work now without a retry, returns
 * `nothingToDo(…)` when its resource needs nothing (already settled), and `snooze(…)` when it
 * cannot start yet (a limit is full) and should run again later without using an attempt.
 */
export type JobRun<Payload, Result = void> = {
  // Method syntax for parameter bivariance: every handler is assignable to the erased RunnableJob of the job list.
  run(payload: Payload, context: JobContext): Promise<Result | NothingToDo | Snoozed>;
}['run'];

/**
 * A job type's contract: a versioned queue name, the payload shared by the API (which enqueues) and
 * the workers (which re-validate), the queue's policy, an optional cron schedule and what operators
 * may search and see. It names no code: the composition root (src/app/jobs.ts) binds each definition
 * to its handler and ends (`bindJob`), so a domain's `jobs.ts` never imports its handlers and the
 * handlers may import the payload types back without an import circle. A breaking payload change
 * gets a new version, hence a new queue, so old jobs drain under the old contract.
 */
export interface JobDefinition<Payload extends z.ZodType = z.ZodType> {
  /** The queue: `<name>.v<version>`. */
  name: string;
  version: number;
  payload: Payload;
  policy: QueuePolicy;
  /** Failed jobs (retries exhausted) are copied here for operators to inspect and redrive. */
  deadLetter: string;
  /** Cron (UTC) on which the workers send this job with an empty payload; pg-boss sends each run once. */
  cron: string | null;
  /**
   * Payload fields (top-level ids) operators may search jobs by — "which jobs worked on asset X".
   * Each gets an expression index on the job table at release, so only declared fields are searchable.
   */
  searchable: readonly string[];
  /** Payload fields redacted for organization admins in the console (e.g. e-mail addresses); an operator may reveal them, audited. */
  sensitive: readonly string[];
  /** How long an attempt usually takes; one running past it on a live worker is flagged as stuck. */
  expectedSeconds: number;
  /**
   * What an attempt spends its time on: `waits` — on a model, a provider, a remote API, a receiver
   * (chat turns, generations, metered reads, link imports, deliveries, e-mail), holding no
   * connection meanwhile, so a worker gives the queue hundreds of cheap slots
   * (WORKER_WAITING_SLOTS); `computes` — the CPU or the database (enrichment, thumbnails, text
   * extraction, housekeeping), so slots near the core count (WORKER_COMPUTING_SLOTS).
   */
  nature: JobNature;
  /**
   * The queue's own slots per worker and per concurrency group, when not its nature's default: e.g.
   * webhook deliveries are grouped by endpoint so one slow endpoint holds only its own few slots. A
   * function reads the queue's own setting from the config (localConcurrencyOf).
   */
  work: JobWork;
}

export type JobNature = 'waits' | 'computes';

export interface JobWork {
  localConcurrency?: number | ((config: Config) => number);
  groupConcurrency?: number;
}

/** The slots one worker gives `job`'s queue: its own setting, else its nature's. */
export const localConcurrencyOf = (job: Pick<JobDefinition, 'work' | 'nature'>, config: Config): number => {
  const own = job.work.localConcurrency;
  if (typeof own === 'function') return own(config);
  return own ?? (job.nature === 'waits' ? config.WORKER_WAITING_SLOTS : computingSlots(config));
};

/** Slots of a computing queue per worker: WORKER_COMPUTING_SLOTS, else WORKER_CONCURRENCY (its name before waiting work had slots of its own). */
export const computingSlots = (config: Pick<Config, 'WORKER_COMPUTING_SLOTS' | 'WORKER_CONCURRENCY'>): number =>
  config.WORKER_COMPUTING_SLOTS ?? config.WORKER_CONCURRENCY;

/**
 * A job type bound to its code: the handler and the ends of its resource. Both are loaders (dynamic
 * imports), so a process that only enqueues — the web process — loads no worker code (it loads the
 * ends to cancel).
 */
export interface RunnableJob<Payload extends z.ZodType = z.ZodType, Result = unknown> extends JobDefinition<Payload> {
  handler: () => Promise<JobRun<z.output<Payload>, Result>>;
  /** How its resource ends; `null` for jobs whose work has no resource to settle (e-mails, maintenance). */
  ends: (() => Promise<JobEnds<z.output<Payload>, Result>>) | null;
}

export type PayloadOf<J extends JobDefinition> = z.input<J['payload']>;

export const defaultPolicy: QueuePolicy = {
  retryLimit: 5,
  retryDelaySeconds: 5,
  retryBackoff: true,
  retryDelayMaxSeconds: 600,
  expireInSeconds: 15 * 60,
  // 2 × WORKER_HEARTBEAT_SECONDS' default and pg-boss's minimum: a dead worker's job is retried within 10 s plus one registry beat.
  heartbeatSeconds: 10,
  deleteAfterSeconds: 7 * 24 * 3600,
};

export function defineJob<Payload extends z.ZodType>(spec: {
  name: string;
  version: number;
  payload: Payload;
  /** Required: every kind says whether it waits or computes (its slots follow). */
  nature: JobNature;
  policy?: Partial<QueuePolicy>;
  cron?: string;
  searchable?: readonly (keyof z.input<Payload> & string)[];
  sensitive?: readonly (keyof z.input<Payload> & string)[];
  /** Default: a minute. */
  expectedSeconds?: number;
  work?: JobWork;
}): JobDefinition<Payload> {
  const queue = `${spec.name}.v${spec.version}`;
  return {
    name: queue,
    version: spec.version,
    payload: spec.payload,
    policy: { ...defaultPolicy, ...spec.policy },
    deadLetter: `${queue}.dead`,
    cron: spec.cron ?? null,
    searchable: spec.searchable ?? [],
    sensitive: spec.sensitive ?? [],
    expectedSeconds: spec.expectedSeconds ?? 60,
    nature: spec.nature,
    work: spec.work ?? {},
  };
}

/**
 * Binds a job definition to its code, in the composition root:
 * `bindJob(assetImportJob, { handler: () => import('../assets/handlers.ts').then((m) => m.importLink), ends: … })`.
 * The handler's and the ends' payload types are checked against the definition's.
 */
export function bindJob<Payload extends z.ZodType, Result = void>(
  definition: JobDefinition<Payload>,
  code: {
    handler: () => Promise<JobRun<NoInfer<z.output<Payload>>, Result>>;
    ends?: () => Promise<JobEnds<NoInfer<z.output<Payload>>, NoInfer<Result>>>;
  },
): RunnableJob<Payload, Result> {
  return { ...definition, handler: code.handler, ends: code.ends ?? null };
}

// Outcomes a handler signals besides returning a result.

const nothingBrand = Symbol.for('workspace-platform.NothingToDo');
const failureBrand = Symbol.for('workspace-platform.JobFailure');
const leaseBrand = Symbol.for('workspace-platform.LeaseLost');

export interface NothingToDo {
  readonly [nothingBrand]: string;
}

/** The handler's answer when its resource needs nothing (settled already, by an earlier attempt or a cancel): the job completes, no end applies. */
export const nothingToDo = (why: string): NothingToDo => ({ [nothingBrand]: why });
export const isNothingToDo = (value: unknown): value is NothingToDo => typeof value === 'object' && value !== null && nothingBrand in value;
export const whyNothing = (value: NothingToDo) => value[nothingBrand];

const snoozeBrand = Symbol.for('workspace-platform.Snoozed');

export interface Snoozed {
  readonly [snoozeBrand]: { seconds: number; why: string };
}

/**
 * The handler's answer when the work cannot start yet (every slot of a limit is held, an upstream
 * asked to come back later) and wrote nothing: the runtime puts the job back to run again after
 * `seconds`, without using one of its retries (src/jobs/boss-sql/attempts.ts `snoozeAttempt`); the
 * attempt history records it `deferred` with `why`. No end applies.
 */
export const snooze = (seconds: number, why: string): Snoozed => ({ [snoozeBrand]: { seconds, why } });
export const isSnoozed = (value: unknown): value is Snoozed => typeof value === 'object' && value !== null && snoozeBrand in value;
export const snoozeOf = (value: Snoozed) => value[snoozeBrand];

const busyBrand = Symbol.for('workspace-platform.UpstreamBusy');

/**
 * Thrown from anywhere under a handler when an upstream has no capacity now (a provider limit is
 * full, or it answered 429): the runtime snoozes the job for `seconds` (as `snooze`), so the work
 * waits queued, using no retry, instead of failing. The handler must have written nothing it would
 * not find again (every handler is idempotent).
 */
export class UpstreamBusy extends Error {
  readonly [busyBrand] = true;
  readonly seconds: number;
  constructor(seconds: number, message: string) {
    super(message);
    this.seconds = seconds;
    this.name = 'UpstreamBusy';
  }
}
export const isUpstreamBusy = (error: unknown): error is UpstreamBusy => typeof error === 'object' && error !== null && busyBrand in error;

/** Thrown by a handler: the work cannot succeed (the provider refused it, a setting is no longer valid) — no retry; the kind's `failed` end applies with this reason. */
export class JobFailure extends Error {
  readonly [failureBrand] = true;
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'JobFailure';
  }
}
export const failForGood = (code: string, message: string, cause?: unknown) => new JobFailure(code, message, { cause });
export const isJobFailure = (error: unknown): error is JobFailure => typeof error === 'object' && error !== null && failureBrand in error;

/** The attempt no longer holds its job (canceled, expired, retried elsewhere): it must write nothing more. */
export class LeaseLost extends Error {
  readonly [leaseBrand] = true;
  readonly job: { queue: string; id: string; attempt: number };
  readonly state: string | null;
  constructor(job: { queue: string; id: string; attempt: number }, state: string | null) {
    super(`job ${job.id} (${job.queue}, attempt ${job.attempt}) is no longer held by this attempt (it is ${state ?? 'gone'})`);
    this.job = job;
    this.state = state;
    this.name = 'LeaseLost';
  }
}
export const isLeaseLost = (error: unknown): error is LeaseLost => typeof error === 'object' && error !== null && leaseBrand in error;

/**
 * One attempt of `job` on `data`, exactly as a worker runs it: the payload is re-validated (it
 * crossed a process boundary and may predate a deploy), then the handler is loaded and called.
 * Called outside a worker (tests of a handler), steps are plain transactions: there is no lease.
 */
export async function runJob<J extends RunnableJob>(
  job: J,
  data: unknown,
  context: Omit<JobContext, 'lastAttempt' | 'step'> & Partial<Pick<JobContext, 'step'>>,
): Promise<unknown> {
  // The origin's reserved keys (src/jobs/origin.ts) are not part of the payload contract.
  const payload = job.payload.parse(unstamp(data).payload) as z.output<J['payload']>;
  const run = await job.handler();
  return run(payload, {
    ...context,
    step: context.step ?? ((work) => inTransaction(context.deps.db, work)),
    lastAttempt: isLastAttempt(context.job, job),
  });
}

/**
 * Whether no retry follows this attempt. The job row's own limit decides: a worker's claim returns
 * it (src/jobs/boss-sql/claims.ts), and a snooze raises it; the kind's policy stands in otherwise.
 */
export const isLastAttempt = (attempt: Pick<Job, 'retryCount'> & { retryLimit?: number }, job: Pick<RunnableJob, 'policy'>): boolean =>
  (attempt.retryCount ?? 0) >= (attempt.retryLimit ?? job.policy.retryLimit);
