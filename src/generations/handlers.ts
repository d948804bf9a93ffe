// Worker side of a generation (loaded by the `handler` of generationJob in ./jobs.ts): run the
// model's provider and store its files; the runtime then settles the generation through ./ends.ts.
import { createHash } from 'node:crypto';
import { type GeneratedAsset, generatedAssetKey, measureGeneratedFile } from '../assets/index.ts';
import { isReadFailure } from '../core/read-failure.ts';
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import { progressPublisher } from '../jobs/progress.ts';
import { boundedWait, isContinueLater } from '../jobs/waits.ts';
import type { Knex } from 'knex';
import { type CallRow, isOpen, startCall } from '../metering/index.ts';
import type { GeneratedFile } from '../providers/generation/index.ts';
import type { GenerationPayload } from './jobs.ts';
import type { GenerationModelRow } from './models.ts';
import type { GenerationRow } from './presenter.ts';
import { chargedCredits } from './quote.ts';

/** How often a running generation writes its progress. */
const PROGRESS_MS = 500;

/** What a finished generation hands its `succeeded` end: its stored files as assets-to-be, and what it cost. */
export interface GeneratedOutput {
  assets: GeneratedAsset[];
  usage: unknown;
  sandbox: boolean;
  credits: number;
  /** When the attempt that made it began (ISO): the generation's `started_at` if nothing wrote it before. */
  startedAt: string;
}

/** A generated file's asset id, the same on every attempt: a retried settle inserts nothing twice. */
const assetIdOf = (generationId: string, index: number) => {
  const hex = createHash('sha256').update(`generation:${generationId}:${index}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

export async function runGeneration({ generation_id }: GenerationPayload, job: JobContext): Promise<GeneratedOutput | NothingToDo> {
  const { deps, signal } = job;
  const began = new Date();
  // The generation with its model's catalog row and its call, in one read: nothing is written yet.
  const found = (await deps
    .db('generations as g')
    .join('generation_models as m', 'm.id', 'g.model')
    .join('metered_calls as c', 'c.id', 'g.call_id')
    .where('g.id', generation_id)
    .first('g.*', deps.db.raw('to_jsonb(m) AS model_row'), 'c.status AS call_status', 'c.quoted_pages AS call_pages', 'c.created_at AS call_created_at')) as
    | (GenerationRow & { model_row: GenerationModelRow; call_status: string; call_pages: number; call_created_at: Date })
    | undefined;
  if (!found || !isOpen({ status: found.call_status as CallRow['status'] }))
    return nothingToDo('the generation was settled already (canceled, or an earlier attempt)');
  const { model_row: model, call_status: _status, call_pages: quotedPages, call_created_at: accepted, ...generation } = found;
  const provider = deps.providers.generation.for(model.provider);
  if (!provider) throw failForGood('refused', `the ${model.provider} generation service is not configured`);

  // The whole budget counts from acceptance, so a retried (or continued) attempt does not restart it.
  const budget = deps.config.GENERATION_TIMEOUT_MS - (Date.now() - accepted.getTime());
  // A job already accepted upstream by an earlier attempt: this attempt resumes waiting for it.
  const resume = generation.upstream_job_id ?? undefined;
  if (budget <= 0) {
    if (resume) await provider.cancel?.(resume);
    throw resume
      ? failForGood('timeout', `the generation did not finish within ${deps.config.GENERATION_TIMEOUT_MS} ms`)
      : failForGood('timeout', 'the generation ran out of time before it started');
  }
  const timeout = AbortSignal.timeout(budget);
  // Waits past JOB_WAIT_BOUND_SECONDS hold no slot: the job continues later (src/jobs/waits.ts), due
  // by the timeout at the latest. A resumed wait has outlasted the bound already: it continues at once.
  const boundMs = deps.config.JOB_WAIT_BOUND_SECONDS * 1000;
  const wait = boundedWait(resume ? 0 : boundMs, `waiting on the ${model.provider} service`, budget);

  // `running` (and the call's start) is written by the first progress write, which goes out on the
  // next turn of the event loop: a provider that answers at once (no I/O, no timer — the sandbox
  // without a delay) has stopped the publisher by then, and the generation goes from `queued` to its
  // end in the end's one transaction, which records when this attempt began. Anything that waits
  // shows `running` at once, as before. Each write is a step under the attempt's lease.
  let callStarted = resume !== undefined;
  const start = async (trx: Knex.Transaction, value: number) => {
    if (!callStarted) await startCall(trx, generation.call_id);
    callStarted = true;
    await trx('generations')
      .where({ id: generation.id })
      .whereIn('status', ['queued', 'running'])
      .update({ status: 'running', started_at: trx.raw('coalesce(started_at, ?)', [began]), progress: value, updated_at: trx.fn.now() });
  };
  const progress = progressPublisher<number>(job, PROGRESS_MS, start);
  let reported = 0;
  const report = (value: number) => {
    reported = Math.max(0, Math.min(1, value));
    progress.publish(reported);
  };
  report(0);
  try {
    const result = await provider.generate({
      kind: generation.kind,
      model: model.id,
      prompt: generation.prompt,
      parameters: generation.parameters,
      signal: AbortSignal.any([signal, timeout]),
      onProgress: report,
      idempotencyKey: generation.id,
      resume,
      wait,
      // Recorded (and `running` shown) before any wait, so a continued attempt resumes this very job.
      onSubmitted: (upstreamJobId) =>
        job.step(async (trx) => {
          await start(trx, reported);
          await trx('generations').where({ id: generation.id }).update({ upstream_job_id: upstreamJobId });
        }),
    });
    // No more progress: the `succeeded` end writes the last (1) with the result.
    progress.stop();
    // Files first (the same keys on every attempt); the `succeeded` end makes them assets.
    const assets = await Promise.all(result.files.map((file, index) => store(generation, file, index, result.sandbox)));
    return {
      assets,
      usage: result.usage,
      sandbox: result.sandbox,
      credits: chargedCredits({ model, units: quotedPages }, result.usage),
      startedAt: began.toISOString(),
    };
  } catch (error) {
    // A cancel or a lost lease: the runtime knows which, and writes nothing of this attempt.
    if (signal.aborted) throw error;
    // The attempt ran and failed: the generation shows it started (unless its lease is gone meanwhile).
    await progress.flush();
    if (!callStarted) await job.step((trx) => start(trx, reported)).catch(() => undefined);
    if (isContinueLater(error)) throw error;
    if (timeout.aborted) throw failForGood('timeout', `the generation did not finish within ${deps.config.GENERATION_TIMEOUT_MS} ms`, error);
    if (isReadFailure(error)) throw failForGood(error.kind, error.message, error);
    throw error;
  } finally {
    progress.stop();
  }

  async function store(row: GenerationRow, file: GeneratedFile, index: number, sandbox: boolean): Promise<GeneratedAsset> {
    const id = assetIdOf(row.id, index);
    await deps.providers.storage.put(generatedAssetKey(row.organization_id, id), file.bytes, file.contentType);
    const isText = file.contentType.startsWith('text/');
    const type = isText ? 'text' : row.kind === 'video' ? 'video' : row.kind;
    // Enrichment of the bytes in hand, here rather than in a job of its own (src/assets/generated.ts);
    // a file it cannot measure is left to that job, which records why.
    const measured = await measureGeneratedFile(deps, { id, organization_id: row.organization_id, type }, file.bytes, file.contentType, signal).catch(
      (error: unknown) => {
        if (signal.aborted) throw error;
        job.log.warn({ err: error, asset_id: id }, 'generated file not measured here: its enrichment job will');
        return undefined;
      },
    );
    return {
      id,
      type,
      mimeType: file.contentType,
      title: row.title ?? row.prompt.slice(0, 120),
      content: isText ? file.bytes.toString('utf8') : undefined,
      metadata: {
        generation: { model: row.model, sandbox, extension: file.extension },
        ...(file.width !== undefined && { width: file.width, height: file.height }),
        ...(file.durationMs !== undefined && { duration_ms: file.durationMs }),
      },
      measured,
    };
  }
}
