import type { z } from 'zod';
import { bindJob, defineJob, type JobEnds, type JobRun, type RunnableJob } from '../../src/jobs/define.ts';

/**
 * A job type of a test, declared and bound in one call: the definition (`defineJob`) plus its code,
 * as src/app/jobs.ts binds the platform's.
 */
export function testJob<Payload extends z.ZodType, Result = void>(
  spec: Parameters<typeof defineJob<Payload>>[0] & {
    handler: () => Promise<JobRun<NoInfer<z.output<Payload>>, Result>>;
    ends?: () => Promise<JobEnds<NoInfer<z.output<Payload>>, NoInfer<Result>>>;
  },
): RunnableJob<Payload, Result> {
  const { handler, ends, ...definition } = spec;
  return bindJob(defineJob(definition), ends ? { handler, ends } : { handler });
}
