import type { JobEnds } from '../jobs/define.ts';

/** A delivery whose job ended without success: failed (retries exhausted) or canceled by an operator; a delivery already settled stays as it is. */
export const deliveryEnds: JobEnds<{ delivery_id: string }, unknown> = {
  async failed(trx, { delivery_id }, reason) {
    await trx('webhook_deliveries')
      .where({ id: delivery_id, status: 'pending' })
      .update({ status: 'failed', status_reason: reason.message.slice(0, 500) });
  },
  async canceled(trx, { delivery_id }) {
    await trx('webhook_deliveries').where({ id: delivery_id, status: 'pending' }).update({ status: 'failed', status_reason: 'the delivery job was canceled' });
  },
};
