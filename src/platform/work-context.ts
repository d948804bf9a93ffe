import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What the work in progress is part of: the HTTP request that started it, and — inside a worker —
 * the job attempt running it. Set once at the edge (the request-id middleware, the worker's job
 * wrapper) and read wherever it is needed without threading it through every call: the logger
 * stamps every line with it, and `JobQueue.enqueue` records the request id on each job it sends,
 * so one id follows work from the API into the workers (and into the jobs those jobs send).
 */
export interface WorkContext {
  /** The request that caused this work; inside a job, the request that enqueued the job. */
  request_id?: string;
  job_id?: string;
  queue?: string;
}

const storage = new AsyncLocalStorage<WorkContext>();

export function runInWorkContext<T>(context: WorkContext, work: () => T): T {
  return storage.run(context, work);
}

/** The context of the work in progress (empty outside a request or job). */
export function workContext(): WorkContext {
  return storage.getStore() ?? {};
}
