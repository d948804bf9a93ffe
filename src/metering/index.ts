// Metered reads: the catalog contract every billed read declares (social, search, read-url), and the machinery that bills them exactly once.
export { chargeOf, defineReadOperation, networks, quoteOf } from './operation.ts';
export type { Network, PerformContext, PriceModel, ReadOperation, ReadOutcome } from './operation.ts';
// The machinery (web side: accept and wait; worker side: the job; both: the one settle path).
export { acceptCall, acceptRead, type CallSpec, type CallTerms, reserveCall } from './accept.ts';
export { type CallErrorCode, type CallRow, holdRunIdOf, isOpen, loadCall, type NewCall, startCall } from './calls.ts';
export { describeOperation } from './descriptors.ts';
export { meteredCallJob } from './jobs.ts';
export { presentCall } from './present.ts';
export {
  callResponseOf,
  callTermsDependencies,
  callTermsFields,
  callTermsKeys,
  type Descriptor,
  descriptorSchema,
  priceSchema,
  quoteSchema,
} from './schema.ts';
export { cancelCall } from './cancel.ts';
export { type CallOutcome, outcomeOfEnd, type SettleOptions, settleCall } from './settle.ts';
export { callAndWait } from './wait.ts';
export { callAndAwait } from './await.ts';
