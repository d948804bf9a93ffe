import type { JobEnds } from '../jobs/define.ts';
import { recordAttempt, type SentAttempt } from './attempts.ts';

/**
 * A delivery's ends. Succeeded: the endpoint answered 2xx — the attempt is recorded (and its slot
 * freed) in the transaction that completes the job. Failed (retries exhausted) or canceled by an
 * operator: a delivery already settled stays as it is.
 */
export const deliveryEnds: JobEnds<{ delivery_id: string }, SentAttempt> = {
  async succeeded(trx, _payload, attempt, { deps }) {
    await recordAttempt(trx, deps, attempt);
  },
  async failed(trx, { delivery_id }, reason) {
    await trx('webhook_deliveries')
      .where({ id: delivery_id, status: 'pending' })
      .update({ status: 'failed', status_reason: reason.message.slice(0, 500) });
  },
  async canceled(trx, { delivery_id }) {
    await trx('webhook_deliveries').where({ id: delivery_id, status: 'pending' }).update({ status: 'failed', status_reason: 'the delivery job was canceled' });
  },
};
