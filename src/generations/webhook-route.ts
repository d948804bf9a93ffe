import { AppError, notFound } from '../core/errors.ts';
import { z } from '../core/zod.ts';
import { inTransaction } from '../db/transaction.ts';
import { publicAccess } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { wakeWorkOn } from '../jobs/waits.ts';
import { verifyPredictionWebhook } from '../providers/generation/index.ts';
import { generationJob } from './jobs.ts';

// The service's prediction, loosely: only its id is read; the signature over the raw body vouches for it.
const predictionEvent = z
  .object({ id: z.string().min(1), status: z.string().optional() })
  .passthrough()
  .openapi('PredictionEvent');

const signatureHeaders = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/**
 * The prediction service's completion webhook (GENERATION_PREDICTION_WEBHOOK_URL). Not an operation
 * of the API: no bearer token; the Standard Webhooks signature (GENERATION_PREDICTION_WEBHOOK_SECRET)
 * over the raw body authenticates it. It only wakes the generation's waiting job — its next attempt
 * polls the prediction and the service's answer there decides, so a delivery can end nothing itself.
 */
export const generationWebhookRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/webhooks/generation-predictions',
    operationId: 'receivePredictionWebhook',
    summary: 'Receive a prediction service’s completion notice (authenticated by its webhook-signature header)',
    tag: 'Generations',
    public: true,
    authorize: publicAccess('the Standard Webhooks signature over the raw body authenticates it'),
    headers: z.object({ 'webhook-id': z.string().optional(), 'webhook-timestamp': z.string().optional(), 'webhook-signature': z.string().optional() }),
    body: predictionEvent,
    response: {
      status: 200,
      description: 'Received; `outcome` says whether a waiting generation was woken',
      schema: z.object({ received: z.literal(true), outcome: z.enum(['woken', 'not_waiting', 'unknown_prediction']) }),
    },
    errors: [404],
    handler: async ({ ctx, deps, body }) => {
      const secret = deps.config.GENERATION_PREDICTION_WEBHOOK_SECRET;
      if (!secret) throw notFound('prediction webhook');
      const [id, timestamp, signature] = signatureHeaders.map((name) => ctx.get(name));
      const raw = (ctx.request as { rawBody?: string }).rawBody ?? '';
      if (!verifyPredictionWebhook({ secret, id: id!, timestamp: timestamp!, signature: signature!, body: raw }))
        throw new AppError('validation_failed', 'webhook-signature: no valid signature of this body by the configured secret, within 5 minutes', [
          { path: ['webhook-signature'], message: 'not a valid signature' },
        ]);
      const outcome = await inTransaction(deps.db, async (trx) => {
        const generation = (await trx('generations').where({ upstream_job_id: body.id }).first('id')) as { id: string } | undefined;
        if (!generation) return 'unknown_prediction' as const;
        return (await wakeWorkOn(trx, generationJob, 'generation_id', generation.id)) > 0 ? ('woken' as const) : ('not_waiting' as const);
      });
      return { received: true as const, outcome };
    },
  }),
];
