// How a generation's job ends, for the generation: its metered call settles (capture or release)
// with the generation's end and its assets, in the transaction that ends the job.
import type { Knex } from 'knex';
import { actorFor, fileIntoProjectOnCreate } from '../access/index.ts';
import { type GeneratedAsset, insertGeneratedAssets } from '../assets/index.ts';
import { isAppError } from '../core/errors.ts';
import type { EndContext, JobEnds } from '../jobs/define.ts';
import { type CallOutcome, outcomeOfEnd, settleCall } from '../metering/index.ts';
import type { GeneratedOutput } from './handlers.ts';
import { generationCancelUpstreamJob, type GenerationPayload } from './jobs.ts';
import type { GenerationRow } from './presenter.ts';
import { endGeneration } from './state.ts';

const load = async (trx: Knex.Transaction, id: string) => (await trx('generations').where({ id }).first()) as GenerationRow | undefined;

/** The generation ends as its call settles: assets only beside a capture, never beside a release. */
async function settle(trx: Knex.Transaction, context: EndContext, generation: GenerationRow, outcome: CallOutcome, output?: GeneratedOutput): Promise<void> {
  await settleCall(trx, generation.call_id, outcome, {
    alongside: async (_trx, settled) => {
      if (settled.status !== 'succeeded' || !output) {
        const error = settled.error ?? { code: 'failed', message: 'the generation did not complete' };
        return endGeneration(trx, generation.id, { status: settled.status === 'canceled' ? 'canceled' : 'failed', error });
      }
      await insertGeneratedAssets(
        trx,
        context.deps,
        {
          id: generation.id,
          organizationId: generation.organization_id,
          createdById: generation.created_by_id,
          conversationId: generation.conversation_id,
          canvasId: generation.canvas_id,
        },
        output.assets,
      );
      await endGeneration(trx, generation.id, {
        status: 'succeeded',
        assetIds: output.assets.map((a) => a.id),
        creditsCharged: settled.credits_charged ?? 0,
        sandbox: output.sandbox,
        startedAt: output.startedAt,
      });
      if (generation.project_id && output.assets.length) await fileIntoProject(trx, context, generation, output.assets);
    },
  });
}

/** Files the produced assets into the generation's project, if its creator may still edit it (else they stay unfiled). */
async function fileIntoProject(trx: Knex.Transaction, { deps }: EndContext, generation: GenerationRow, assets: GeneratedAsset[]): Promise<void> {
  const creator = actorFor(trx, { userId: generation.created_by_id });
  for (const asset of assets) {
    await fileIntoProjectOnCreate(trx, creator, { type: 'asset', id: asset.id, organizationId: generation.organization_id }, generation.project_id!).catch(
      (error: unknown) => {
        if (!isAppError(error, 'validation_failed')) throw error;
        deps.log.warn({ generation_id: generation.id, project_id: generation.project_id, reason: error.message }, 'generated asset not filed into its project');
      },
    );
  }
}

/**
 * A generation ending without its result while its provider still runs the job (a prediction it was
 * waiting on between two attempts): the provider is told to stop, by a job of its own after this commit.
 */
async function stopUpstream(trx: Knex.Transaction, { deps }: EndContext, generation: GenerationRow): Promise<void> {
  if (!generation.upstream_job_id || (generation.status !== 'queued' && generation.status !== 'running')) return;
  await deps.jobs.enqueue(trx, generationCancelUpstreamJob, { generation_id: generation.id }, { organizationId: generation.organization_id });
}

export const generationEnds: JobEnds<GenerationPayload, GeneratedOutput> = {
  async succeeded(trx, { generation_id }, output, context) {
    const generation = await load(trx, generation_id);
    if (!generation) return;
    const result = { asset_ids: output.assets.map((a) => a.id), usage: output.usage, sandbox: output.sandbox };
    await settle(trx, context, generation, { status: 'succeeded', result, pages: 1, credits: output.credits }, output);
  },
  async failed(trx, { generation_id }, reason, context) {
    const generation = await load(trx, generation_id);
    if (!generation) return;
    // Only a failure no attempt saw through (its worker lost, its attempt expired) may leave the
    // provider's job running: an attempt that failed stopped it itself, or the provider ended it.
    // Before the settle: its release locks the organization's balance row until the commit.
    if (reason.code === 'lost' || reason.code === 'expired') await stopUpstream(trx, context, generation);
    await settle(trx, context, generation, outcomeOfEnd('failed', reason));
  },
  async canceled(trx, { generation_id }, reason, context) {
    const generation = await load(trx, generation_id);
    if (!generation) return;
    await stopUpstream(trx, context, generation);
    await settle(trx, context, generation, outcomeOfEnd('canceled', reason));
  },
};
