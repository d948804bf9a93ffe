import type { Config } from '../config/schema.ts';

/**
 * Whether a verified token's claims make its holder an operator: the configured claim equals the
 * configured value (or, as an array, contains it), or the subject is a configured operator id.
 */
export function isOperator(config: Pick<Config, 'OPERATOR_CLAIM' | 'OPERATOR_CLAIM_VALUE' | 'OPERATOR_USER_IDS'>, claims: Record<string, unknown>): boolean {
  if (typeof claims.sub === 'string' && config.OPERATOR_USER_IDS.includes(claims.sub)) return true;
  const claim = claims[config.OPERATOR_CLAIM];
  return claim === config.OPERATOR_CLAIM_VALUE || (Array.isArray(claim) && claim.includes(config.OPERATOR_CLAIM_VALUE));
}
