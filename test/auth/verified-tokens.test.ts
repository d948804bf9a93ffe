import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { useServer } from '../support/suite.ts';

/** The web process remembers tokens it verified (by their exact text) for at most a minute and never past `exp`. */
describe('authentication: verified tokens remembered', () => {
  const ctx = useServer();
  const probe = (token: string) => ctx.server.request('get', '/organizations/available-slug', { token, query: { slug: 'probe' } });
  const now = () => Math.floor(Date.now() / 1000);

  it('a remembered token stops working at its exp', async () => {
    const token = jwt.sign({ sub: 'short-lived', exp: now() + 2 }, TEST_JWT_SECRET, { algorithm: 'HS256' });
    expect((await probe(token)).status).to.equal(200);
    expect((await probe(token)).status).to.equal(200); // remembered
    await new Promise((resolve) => setTimeout(resolve, (now() + 2) * 1000 - Date.now() + 1100));
    const late = await probe(token);
    expect(late.status).to.equal(401);
    expect(late.body.message).to.equal('a valid bearer token is required: token expired');
  });

  it('remembering a token does not admit the same claims under another signature', async () => {
    const payload = { sub: 'remembered', exp: now() + 600 };
    const token = jwt.sign(payload, TEST_JWT_SECRET, { algorithm: 'HS256' });
    expect((await probe(token)).status).to.equal(200);
    const forged = jwt.sign(payload, 'another-secret-0123456789-abcdefghijklmnopq', { algorithm: 'HS256' });
    const [head, body] = token.split('.');
    expect(forged.split('.').slice(0, 2)).to.deep.equal([head, body]);
    const res = await probe(forged);
    expect(res.status).to.equal(401);
    expect(res.body.message).to.equal('a valid bearer token is required: token failed verification');
    expect((await probe(token)).status).to.equal(200);
  });

  it('a token refused once is refused again (only verified tokens are remembered)', async () => {
    const bad = jwt.sign({ sub: 'no-exp' }, TEST_JWT_SECRET, { algorithm: 'HS256' });
    for (let i = 0; i < 2; i++) {
      const res = await probe(bad);
      expect(res.status).to.equal(401);
      expect(res.body.message).to.equal('a valid bearer token is required: token has no exp claim');
    }
  });
});
