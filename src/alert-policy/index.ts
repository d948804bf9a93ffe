/**
 * Alert policy — the public module (import from here only): `alertPolicyOf` reads an organization's
 * credit-balance alert policy (thresholds, roles and addresses to tell), the default when unset.
 */
export type { AlertPolicy } from './presenter.ts';
export { alertPolicyOf } from './service.ts';
