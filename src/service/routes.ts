import type { AnyRoute } from '../http/route.ts';
import { defineRoute } from '../http/route.ts';
import { publicAccess } from '../http/authorize.ts';
import { z } from '../core/zod.ts';
import { AppError } from '../core/errors.ts';

const health = z.object({ status: z.literal('ok') });
const readiness = z.object({ status: z.enum(['ok']), database: z.literal('ok'), queue: z.literal('ok') });

/** Service plumbing, open without a token (CONVENTIONS §2). `/openapi.json` is served by the app. */
export const serviceRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'The process is up',
    tag: 'Service',
    public: true,
    authorize: publicAccess('service plumbing'),
    response: { status: 200, description: 'Up', schema: health },
    handler: async () => ({ status: 'ok' as const }),
  }),
  defineRoute({
    method: 'get',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'The database and the job queue are reachable',
    description: 'Answers 503 with an Error body naming what is down.',
    tag: 'Service',
    public: true,
    authorize: publicAccess('service plumbing'),
    response: { status: 200, description: 'Ready', schema: readiness },
    errors: [503],
    handler: async ({ deps }) => {
      const database = await deps.db.raw('select 1').then(
        () => true,
        () => false,
      );
      const queue = database && (await deps.jobs.isReady().catch(() => false));
      if (!database || !queue) {
        throw new AppError('unavailable', !database ? 'database unreachable' : 'job queue unreachable');
      }
      return { status: 'ok' as const, database: 'ok' as const, queue: 'ok' as const };
    },
  }),
];
