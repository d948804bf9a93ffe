/**
 * Alert policy — the public module (import from here only): `alertPolicyOf` reads an organization's
 * credit-balance alert policy (thresholds, roles and addresses to tell), the default when unset;
 * `alertThresholdsColumn` / `alertThresholdsOf` read its thresholds within a caller's statement.
 */
export type { AlertPolicy } from './presenter.ts';
export { type AlertThresholds, alertPolicyOf, alertThresholdsColumn, alertThresholdsOf } from './service.ts';
