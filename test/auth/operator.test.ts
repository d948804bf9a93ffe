import { expect } from 'chai';
import { isOperator } from '../../src/auth/operator.ts';
import { testConfig } from '../support/config.ts';

/** Who is an operator: the configured claim (a value or an array holding it), or a configured user id. */
describe('operators (token claim or configured id)', () => {
  const config = testConfig({ OPERATOR_CLAIM: 'https://example.test/roles', OPERATOR_CLAIM_VALUE: 'operator', OPERATOR_USER_IDS: 'Root_1, ops-2' });

  it('reads the claim as a value or an array, and the configured ids exactly', () => {
    expect(isOperator(config, { sub: 'u1', 'https://example.test/roles': 'operator' })).to.equal(true);
    expect(isOperator(config, { sub: 'u1', 'https://example.test/roles': ['member', 'operator'] })).to.equal(true);
    expect(isOperator(config, { sub: 'Root_1' })).to.equal(true);
    expect(isOperator(config, { sub: 'ops-2' })).to.equal(true);
    for (const claims of [
      { sub: 'root_1' }, // ids are case-sensitive
      { sub: 'u1', 'https://example.test/roles': 'operators' },
      { sub: 'u1', 'https://example.test/roles': ['member'] },
      { sub: 'u1', roles: 'operator' }, // another claim name
      { sub: 'u1' },
    ]) {
      expect(isOperator(config, claims), JSON.stringify(claims)).to.equal(false);
    }
  });

  it('defaults: claim `roles`, value `operator`, no configured ids', () => {
    const defaults = testConfig();
    expect([defaults.OPERATOR_CLAIM, defaults.OPERATOR_CLAIM_VALUE, defaults.OPERATOR_USER_IDS]).to.deep.equal(['roles', 'operator', []]);
    expect(isOperator(defaults, { sub: 'u1', roles: ['operator'] })).to.equal(true);
  });
});
