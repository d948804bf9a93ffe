// Worker side of a generation (loaded by the `handler` of generationJob in ./jobs.ts): run the
// model's provider and store its files; the runtime then settles the generation through ./ends.ts.
import { createHash } from 'node:crypto';
import { type GeneratedAsset, generatedAssetKey } from '../assets/index.ts';
import { isReadFailure } from '../core/read-failure.ts';
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import { progressPublisher } from '../jobs/progress.ts';
import { startCall } from '../metering/index.ts';
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
}

/** A generated file's asset id, the same on every attempt: a retried settle inserts nothing twice. */
const assetIdOf = (generationId: string, index: number) => {
  const hex = createHash('sha256').update(`generation:${generationId}:${index}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

export async function runGeneration({ generation_id }: GenerationPayload, job: JobContext): Promise<GeneratedOutput | NothingToDo> {
  const { deps, signal } = job;
  const started = await job.step(async (trx) => {
    // The generation with its model's catalog row, in one read (the model decides the provider and the price).
    const found = (await trx('generations as g')
      .join('generation_models as m', 'm.id', 'g.model')
      .where('g.id', generation_id)
      .first('g.*', trx.raw('to_jsonb(m) AS model_row'))) as (GenerationRow & { model_row: GenerationModelRow }) | undefined;
    if (!found) return null;
    const { model_row: model, ...generation } = found;
    const call = await startCall(trx, generation.call_id);
    if (!call) return null;
    await trx('generations')
      .where({ id: generation.id, status: 'queued' })
      .update({ status: 'running', started_at: trx.fn.now(), progress: 0, updated_at: trx.fn.now() });
    return { generation, model, call };
  });
  if (!started) return nothingToDo('the generation was settled already (canceled, or an earlier attempt)');
  const { generation, model, call } = started;
  const provider = deps.providers.generation.for(model.provider);
  if (!provider) throw failForGood('refused', `the ${model.provider} generation service is not configured`);

  // The whole budget counts from acceptance, so a retried attempt does not restart it.
  const budget = deps.config.GENERATION_TIMEOUT_MS - (Date.now() - call.created_at.getTime());
  if (budget <= 0) throw failForGood('timeout', 'the generation ran out of time before it started');
  const timeout = AbortSignal.timeout(budget);
  const progress = progressPublisher<number>(job, PROGRESS_MS, (trx, value) =>
    trx('generations').where({ id: generation.id, status: 'running' }).update({ progress: value, updated_at: trx.fn.now() }),
  );
  try {
    const result = await provider.generate({
      kind: generation.kind,
      model: model.id,
      prompt: generation.prompt,
      parameters: generation.parameters,
      signal: AbortSignal.any([signal, timeout]),
      onProgress: (p) => progress.publish(Math.max(0, Math.min(1, p))),
      idempotencyKey: generation.id,
    });
    // No more progress: the `succeeded` end writes the last (1) with the result. Stopped before the
    // files are stored, so a value published during the call is not written in a transaction of its own.
    progress.stop();
    // Files first (the same keys on every attempt); the `succeeded` end makes them assets.
    const assets = await Promise.all(result.files.map((file, index) => store(generation, file, index, result.sandbox)));
    return { assets, usage: result.usage, sandbox: result.sandbox, credits: chargedCredits({ model, units: call.quoted_pages }, result.usage) };
  } catch (error) {
    // A cancel or a lost lease: the runtime knows which, and writes nothing of this attempt.
    if (signal.aborted) throw error;
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
    return {
      id,
      type: isText ? 'text' : row.kind === 'video' ? 'video' : row.kind,
      mimeType: file.contentType,
      title: row.title ?? row.prompt.slice(0, 120),
      content: isText ? file.bytes.toString('utf8') : undefined,
      metadata: {
        generation: { model: row.model, sandbox, extension: file.extension },
        ...(file.width !== undefined && { width: file.width, height: file.height }),
        ...(file.durationMs !== undefined && { duration_ms: file.durationMs }),
      },
    };
  }
}
