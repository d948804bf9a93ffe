import type { JobHandler } from '../handler.ts';

/** One handler per job type of `src/jobs/queues.ts`. */
export const handlers: readonly JobHandler<any>[] = [];
