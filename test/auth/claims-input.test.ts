import { expect } from 'chai';
import { signToken } from '../../src/auth/sign.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { useServer } from '../support/suite.ts';

// Token claims are input like any other: a claim the database cannot store makes the token
// unacceptable (401, like any token that fails verification), never a 500.
describe('token claims at the validation boundary', () => {
  const ctx = useServer();
  const token = (claims: { sub: string; email?: string; name?: string }) => signToken(TEST_JWT_SECRET, { ...claims, ttlSeconds: 600 });
  const unauthorized = (why: string) => ({ code: 'unauthorized', message: `a valid bearer token is required: ${why}`, data: { issues: [] } });

  for (const claim of ['sub', 'email', 'name'] as const) {
    it(`a NUL character in ${claim} is a 401 naming the claim; no user row is written`, async () => {
      const sub = claim === 'sub' ? 'nul\u0000user' : `nul-${claim}-${Date.now()}`;
      const res = await ctx.server.request('get', '/organizations/available-slug', {
        query: { slug: 'acme' },
        token: token({ sub, ...(claim === 'email' && { email: 'a\u0000b@example.test' }), ...(claim === 'name' && { name: 'Ada\u0000' }) }),
      });
      expect(res.status).to.equal(401);
      expect(res.body).to.deep.equal(unauthorized(`token ${claim} must not contain the NUL character (U+0000)`));
      if (claim !== 'sub') expect(await ctx.db('users').where({ id: sub }).first()).to.equal(undefined);
    });
  }

  it('a sub of 256 characters is a 401; of 255 it is served', async () => {
    const tooLong = await ctx.server.request('get', '/organizations/available-slug', { query: { slug: 'acme' }, token: token({ sub: 's'.repeat(256) }) });
    expect(tooLong.status).to.equal(401);
    expect(tooLong.body).to.deep.equal(unauthorized('token sub must be a string of 1–255 characters'));
    const longest = await ctx.server.request('get', '/organizations/available-slug', { query: { slug: 'acme' }, token: token({ sub: 't'.repeat(255) }) });
    expect(longest.status, JSON.stringify(longest.body)).to.equal(200);
  });
});
