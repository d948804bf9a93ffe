// Composition root: every operation billed through `meteredOperationJob`, by the name its jobs give.
import { meteredOperations, sandboxWait, type MeteredOperations } from './credits/metered.ts';

export function createMeteredOperations(): MeteredOperations {
  return meteredOperations({ 'sandbox.wait': sandboxWait });
}
