// Worker side of generationCancelUpstreamJob (./jobs.ts): ask the provider to stop the job it still runs for an ended generation.
import type { JobContext } from '../jobs/define.ts';
import type { GenerationService } from '../providers/generation/index.ts';
import type { GenerationPayload } from './jobs.ts';

export async function cancelUpstream({ generation_id }: GenerationPayload, { deps, log }: JobContext): Promise<void> {
  const found = (await deps
    .db('generations as g')
    .join('generation_models as m', 'm.id', 'g.model')
    .where('g.id', generation_id)
    .first('g.upstream_job_id', 'm.provider')) as { upstream_job_id: string | null; provider: GenerationService } | undefined;
  if (!found?.upstream_job_id) return;
  await deps.providers.generation.for(found.provider)?.cancel?.(found.upstream_job_id);
  log.info({ generation_id, upstream_job_id: found.upstream_job_id }, 'asked the provider to stop the job of an ended generation');
}
