// Worker side of a generation (loaded by the `handler` of generationJob in ./jobs.ts).
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { actorFor, fileIntoProjectOnCreate } from '../access/index.ts';
import { type GeneratedAsset, generatedAssetKey, insertGeneratedAssets } from '../assets/index.ts';
import { isAppError } from '../core/errors.ts';
import { isReadFailure } from '../core/read-failure.ts';
import type { JobContext } from '../jobs/define.ts';
import { type CallErrorCode, type CallOutcome, isOpen, loadCall, settleCall, startCall } from '../metering/index.ts';
import type { GeneratedFile } from '../providers/generation/index.ts';
import type { GenerationPayload } from './jobs.ts';
import type { GenerationModelRow } from './models.ts';
import type { GenerationRow } from './presenter.ts';
import { chargedCredits } from './quote.ts';
import { endGeneration } from './state.ts';

/** How often a running generation looks whether it was canceled (to abort the provider call) and writes its progress. */
const WATCH_MS = 500;

/** A generated file's asset id, the same on every attempt: a retried settle inserts nothing twice. */
const assetIdOf = (generationId: string, index: number) => {
  const hex = createHash('sha256').update(`generation:${generationId}:${index}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

export async function runGeneration({ generation_id }: GenerationPayload, { deps, log, signal, lastAttempt }: JobContext): Promise<void> {
  const generation = (await deps.db('generations').where({ id: generation_id }).first()) as GenerationRow | undefined;
  if (!generation) return;
  const call = await startCall(deps.db, generation.call_id);
  if (!call) return; // canceled, or settled by an earlier attempt
  await deps
    .db('generations')
    .where({ id: generation.id, status: 'queued' })
    .update({ status: 'running', started_at: deps.db.fn.now(), progress: 0, updated_at: deps.db.fn.now() });
  const model = (await deps.db('generation_models').where({ id: generation.model }).first()) as GenerationModelRow;
  const settle = (outcome: CallOutcome, assets: GeneratedAsset[] = [], sandbox = false) =>
    settleCall(deps, generation.call_id, outcome, {
      // The generation ends as its call settled: assets only with a capture, never beside a release.
      alongside: async (trx, settled) => {
        if (settled.status !== 'succeeded') {
          const error = settled.error ?? { code: 'failed', message: 'the generation did not complete' };
          return endGeneration(trx, generation.id, { status: settled.status === 'canceled' ? 'canceled' : 'failed', error });
        }
        await insertGeneratedAssets(
          trx,
          deps,
          {
            id: generation.id,
            organizationId: generation.organization_id,
            createdById: generation.created_by_id,
            conversationId: generation.conversation_id,
            canvasId: generation.canvas_id,
          },
          assets,
        );
        await endGeneration(trx, generation.id, {
          status: 'succeeded',
          assetIds: assets.map((a) => a.id),
          creditsCharged: settled.credits_charged ?? 0,
          sandbox,
        });
        if (generation.project_id && assets.length) await fileIntoProject(trx, assets);
      },
    });
  /** Files the produced assets into the generation's project, if its creator may still edit it (else they stay unfiled). */
  const fileIntoProject = async (trx: Knex.Transaction, assets: GeneratedAsset[]) => {
    const creator = actorFor(trx, { userId: generation.created_by_id });
    for (const asset of assets) {
      await fileIntoProjectOnCreate(trx, creator, { type: 'asset', id: asset.id, organizationId: generation.organization_id }, generation.project_id!).catch(
        (error: unknown) => {
          if (!isAppError(error, 'validation_failed')) throw error;
          log.warn({ generation_id, project_id: generation.project_id, reason: error.message }, 'generated asset not filed into its project');
        },
      );
    }
  };
  const fail = (code: CallErrorCode, message: string) => settle({ status: 'failed', error: { code, message } });

  const provider = deps.providers.generation.for(model.provider);
  if (!provider) return void (await fail('refused', `the ${model.provider} generation service is not configured`));

  // The whole budget counts from acceptance, so a retried attempt does not restart it.
  const budget = deps.config.GENERATION_TIMEOUT_MS - (Date.now() - call.created_at.getTime());
  if (budget <= 0) return void (await fail('timeout', 'the generation ran out of time before it started'));
  const controller = new AbortController();
  const timeout = AbortSignal.timeout(budget);
  const abort = () => controller.abort(timeout.aborted ? timeout.reason : signal.reason);
  signal.addEventListener('abort', abort);
  timeout.addEventListener('abort', abort);
  let canceled = false;
  let progress: number | null = null;
  let written: number | null = null;
  const watch = setInterval(() => {
    void loadCall(deps.db, call.id).then(
      async (row) => {
        if (row && !isOpen(row)) {
          canceled = true;
          controller.abort(new Error('the generation was canceled'));
        } else if (progress !== null && progress !== written) {
          written = progress;
          await deps.db('generations').where({ id: generation.id, status: 'running' }).update({ progress, updated_at: deps.db.fn.now() });
        }
      },
      () => undefined,
    );
  }, WATCH_MS);

  try {
    const result = await provider.generate({
      kind: generation.kind,
      model: model.id,
      prompt: generation.prompt,
      parameters: generation.parameters,
      signal: controller.signal,
      onProgress: (p) => (progress = Math.max(0, Math.min(1, p))),
      idempotencyKey: generation.id,
    });
    // Files first (the same keys on every attempt), then the settle that makes them assets.
    const assets = await Promise.all(result.files.map((file, index) => store(generation, file, index, result.sandbox)));
    const credits = chargedCredits({ model, units: call.quoted_pages }, result.usage);
    const settled = await settle(
      { status: 'succeeded', result: { asset_ids: assets.map((a) => a.id), usage: result.usage, sandbox: result.sandbox }, pages: 1, credits },
      assets,
      result.sandbox,
    );
    log.info({ generation_id, status: settled.status, credits_charged: settled.credits_charged }, 'generation settled');
  } catch (error) {
    if (canceled) return log.info({ generation_id }, 'generation canceled: provider call aborted');
    if (timeout.aborted) return void (await fail('timeout', `the generation did not finish within ${deps.config.GENERATION_TIMEOUT_MS} ms`));
    if (isReadFailure(error)) return void (await fail(error.kind, error.message));
    if (signal.aborted || !lastAttempt) throw error; // worker stopping or unexpected: retried
    await fail('failed', error instanceof Error ? error.message : String(error));
  } finally {
    clearInterval(watch);
    signal.removeEventListener('abort', abort);
    timeout.removeEventListener('abort', abort);
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
