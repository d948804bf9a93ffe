import { AppError, conflict } from '../core/errors.ts';
import type { CallAnswer } from './notify.ts';

/** A settled call as the answer of its route (spec §4.5), or the Error it ended with; nothing was charged for an error. */
export function presentCall(call: CallAnswer): { operation: string; result: unknown; requests: number; credits_charged: number } {
  if (call.status === 'succeeded')
    return { operation: call.operation, result: call.result, requests: call.pages ?? 1, credits_charged: call.credits_charged ?? 0 };
  const error = call.error ?? { code: 'failed', message: 'the read did not complete' };
  const said = `${call.operation}: ${error.message}; nothing was charged`;
  switch (error.code) {
    case 'run_lock':
      throw conflict(error.message, ['run_lock']);
    case 'timeout':
      throw new AppError('upstream_timeout', said);
    case 'refused':
      throw new AppError('upstream_refused', said, [{ path: ['input'], message: error.message }]);
    case 'canceled':
      throw new AppError('unavailable', said);
    default:
      throw new AppError('upstream_failed', said);
  }
}
