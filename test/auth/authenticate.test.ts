import { expect } from 'chai';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import jwt from 'jsonwebtoken';
import { createDb, type Db } from '../../src/db/knex.ts';
import { signToken } from '../../src/auth/sign.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { testDatabase } from '../support/hooks.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../support/server.ts';

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

function expectUnauthorized(res: ApiResponse): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(401);
  expect(Object.keys(res.body).sort()).to.deep.equal(['code', 'data', 'message']);
  expect(res.body.code).to.equal('unauthorized');
  expect(res.body.message).to.match(/^a valid bearer token is required: /);
  expect(res.body.data).to.deep.equal({ issues: [] });
}

/** An operation that needs nothing but a caller. */
const probe = (server: TestServer, token: string | null, headers: Record<string, string> = {}) =>
  server.request('get', '/organizations/available-slug', { token, headers, query: { slug: 'probe' } });

describe('authentication', () => {
  let db: Db;
  before(() => {
    db = createDb(testDatabase().url, { max: 2 });
  });
  after(async () => db.destroy());

  describe('HS256 (JWT_SECRET)', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer();
    });
    after(async () => server.stop());

    const sign = (payload: object, options: jwt.SignOptions = {}, secret = TEST_JWT_SECRET) => jwt.sign(payload, secret, { algorithm: 'HS256', ...options });

    it('accepts a valid token', async () => {
      const res = await probe(server, sign({ sub: `u_${randomUUID()}` }, { expiresIn: 60 }));
      expect(res.status).to.equal(200);
    });

    it('refuses a request without a token', async () => {
      const res = await probe(server, null);
      expectUnauthorized(res);
      expect(res.body.message).to.equal('a valid bearer token is required: no bearer token');
    });

    for (const [label, header] of [
      ['a Basic scheme', 'Basic dXNlcjpwYXNz'],
      ['Bearer without a token', 'Bearer'],
      ['a token that is not a JWT', 'Bearer not-a-jwt'],
      ['three garbage segments', 'Bearer a.b.c'],
    ] as const) {
      it(`refuses a malformed Authorization header: ${label}`, async () => {
        const res = await probe(server, null, { authorization: header });
        expectUnauthorized(res);
        expect(res.body.message).to.match(/malformed Authorization header|token failed verification$/);
      });
    }

    it('refuses alg none', async () => {
      const token = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'mallory', exp: inAnHour() })}.`;
      expectUnauthorized(await probe(server, token));
    });

    it('refuses a wrong signature', async () => {
      const forged = sign({ sub: 'mallory' }, { expiresIn: 60 }, 'another-secret-that-is-long-enough-0123456789');
      const res = await probe(server, forged);
      expectUnauthorized(res);
      expect(res.body.message).to.equal('a valid bearer token is required: token failed verification');
      // A valid token whose payload was swapped keeps a signature that no longer matches.
      const [header, , signature] = sign({ sub: 'alice' }, { expiresIn: 60 }).split('.');
      expectUnauthorized(await probe(server, `${header}.${b64({ sub: 'admin', exp: inAnHour() })}.${signature}`));
    });

    it('every 401 carries WWW-Authenticate: Bearer (RFC 6750): no error code without a token, invalid_request for a malformed header, invalid_token for a bad token', async () => {
      expect((await probe(server, null)).headers.get('www-authenticate')).to.equal('Bearer realm="api"');
      expect((await probe(server, null, { authorization: 'Basic dXNlcjpwYXNz' })).headers.get('www-authenticate')).to.equal(
        'Bearer realm="api", error="invalid_request", error_description="malformed Authorization header; send -Authorization: Bearer <token>-"',
      );
      const expired = await probe(server, sign({ sub: 'alice', exp: Math.floor(Date.now() / 1000) - 10 }));
      expect(expired.headers.get('www-authenticate')).to.equal('Bearer realm="api", error="invalid_token", error_description="token expired"');
      const noExp = await probe(server, sign({ sub: 'alice' }));
      expect(noExp.headers.get('www-authenticate')).to.equal('Bearer realm="api", error="invalid_token", error_description="token has no exp claim"');
    });

    it('a token minted for another secret (another data directory) is refused saying so', async () => {
      const elsewhere = signToken('the-secret-of-another-data-directory-0123456789', { sub: 'alice', ttlSeconds: 60 });
      const res = await probe(server, elsewhere);
      expectUnauthorized(res);
      expect(res.body.message).to.match(
        /^a valid bearer token is required: token was signed with another secret \(key id [\w-]{16}; this server's is [\w-]{16}\): it was minted for another data directory or JWT_SECRET; mint one for this server with `npm run token -- --sub <user>`/,
      );
      expect(res.headers.get('www-authenticate')).to.match(
        /^Bearer realm="api", error="invalid_token", error_description="token was signed with another secret/,
      );
      // One minted for this server's secret passes.
      expect((await probe(server, signToken(TEST_JWT_SECRET, { sub: 'alice', ttlSeconds: 60 }))).status).to.equal(200);
    });

    it('refuses an expired token', async () => {
      const res = await probe(server, sign({ sub: 'alice', exp: Math.floor(Date.now() / 1000) - 10 }));
      expectUnauthorized(res);
      expect(res.body.message).to.equal('a valid bearer token is required: token expired');
    });

    it('refuses a token without exp', async () => {
      const res = await probe(server, sign({ sub: 'alice' }));
      expectUnauthorized(res);
      expect(res.body.message).to.equal('a valid bearer token is required: token has no exp claim');
    });

    it('refuses a token without sub, or with a non-string sub', async () => {
      expectUnauthorized(await probe(server, sign({ email: 'a@example.test' }, { expiresIn: 60 })));
      expectUnauthorized(await probe(server, sign({ sub: 42 } as object, { expiresIn: 60 })));
      expectUnauthorized(await probe(server, sign({ sub: '' }, { expiresIn: 60 })));
    });

    it('creates the user just in time and refreshes email and name when the claims change', async () => {
      const sub = `jit_${randomUUID()}`;
      expect(await db('users').where({ id: sub }).first()).to.equal(undefined);
      expect((await probe(server, sign({ sub, email: 'First@Example.TEST', name: 'First' }, { expiresIn: 60 }))).status).to.equal(200);
      const created = await db('users').where({ id: sub }).first();
      expect(created).to.include({ email: 'first@example.test', name: 'First' });

      expect((await probe(server, sign({ sub, email: 'second@example.test', name: 'Second' }, { expiresIn: 60 }))).status).to.equal(200);
      const refreshed = await db('users').where({ id: sub }).first();
      expect(refreshed).to.include({ email: 'second@example.test', name: 'Second' });
      expect(refreshed.updated_at.getTime()).to.be.at.least(created.updated_at.getTime());
      expect(await db('users').where({ id: sub }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 1 }]);
    });

    it('writes the user row only when the claims differ from what the process last wrote', async () => {
      const sub = `jit_${randomUUID()}`;
      // xmin changes with an update, xmax with the row lock an upsert takes even when it changes nothing.
      const version = async () => (await db.raw(`SELECT xmin::text AS xmin, xmax::text AS xmax, email FROM users WHERE id = ?`, [sub])).rows[0];
      const first = sign({ sub, email: 'one@example.test', name: 'One' }, { expiresIn: 60 });
      const second = sign({ sub, email: 'two@example.test', name: 'Two' }, { expiresIn: 60 });
      expect((await probe(server, first)).status).to.equal(200);
      const created = await version();
      // Same claims again, even in another token: no statement touches the row.
      expect((await probe(server, first)).status).to.equal(200);
      expect((await probe(server, sign({ sub, email: 'one@example.test', name: 'One' }, { expiresIn: 120 }))).status).to.equal(200);
      expect(await version()).to.deep.equal(created);
      // Changed claims are written; going back to the earlier ones (an older token still in use) is a change too.
      expect((await probe(server, second)).status).to.equal(200);
      expect((await version()).email).to.equal('two@example.test');
      expect((await probe(server, first)).status).to.equal(200);
      expect((await version()).email).to.equal('one@example.test');
    });
  });

  describe('issuer and audience (JWT_ISSUER, JWT_AUDIENCE)', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ JWT_ISSUER: 'https://id.example.test/', JWT_AUDIENCE: 'workspace-api' });
    });
    after(async () => server.stop());

    const sign = (options: jwt.SignOptions) => jwt.sign({ sub: 'alice' }, TEST_JWT_SECRET, { algorithm: 'HS256', expiresIn: 60, ...options });

    it('accepts the configured issuer and audience', async () => {
      expect((await probe(server, sign({ issuer: 'https://id.example.test/', audience: 'workspace-api' }))).status).to.equal(200);
    });

    it('refuses a wrong or missing issuer', async () => {
      const res = await probe(server, sign({ issuer: 'https://evil.example.test/', audience: 'workspace-api' }));
      expectUnauthorized(res);
      expect(res.body.message).to.equal('a valid bearer token is required: token issuer is not accepted');
      expectUnauthorized(await probe(server, sign({ audience: 'workspace-api' })));
    });

    it('refuses a wrong or missing audience', async () => {
      const res = await probe(server, sign({ issuer: 'https://id.example.test/', audience: 'another-api' }));
      expectUnauthorized(res);
      expect(res.body.message).to.equal('a valid bearer token is required: token audience is not accepted');
      expectUnauthorized(await probe(server, sign({ issuer: 'https://id.example.test/' })));
    });
  });

  describe('JWKS (JWKS_URI)', () => {
    let jwks: Server;
    let server: TestServer;
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const issuer = 'https://id.example.test/';
    const audience = 'workspace-api';
    let fetches = 0;

    before(async () => {
      const keys = [
        { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
        { ...ec.publicKey.export({ format: 'jwk' }), kid: 'ec-1', alg: 'ES256', use: 'sig' },
      ];
      jwks = createServer((_req, res) => {
        fetches++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ keys }));
      });
      await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
      const address = jwks.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server = await startTestServer({
        JWT_SECRET: '',
        JWKS_URI: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        JWT_ISSUER: issuer,
        JWT_AUDIENCE: audience,
      });
    });
    after(async () => {
      await server.stop();
      await new Promise((resolve) => jwks.close(resolve));
    });

    const sign = (key: KeyObject | string, algorithm: jwt.Algorithm, keyid: string | undefined, claims: object = {}) =>
      jwt.sign({ sub: `jwks_${randomUUID()}`, name: 'Key Holder', ...claims }, key, {
        algorithm,
        expiresIn: 60,
        issuer,
        audience,
        ...(keyid && { keyid }),
      });

    it('accepts RS256 and ES256 tokens signed by keys of the JWKS, and creates their users', async () => {
      const sub = `jwks_${randomUUID()}`;
      expect((await probe(server, sign(rsa.privateKey, 'RS256', 'rsa-1', { sub }))).status).to.equal(200);
      expect((await probe(server, sign(ec.privateKey, 'ES256', 'ec-1'))).status).to.equal(200);
      expect(await db('users').where({ id: sub }).first()).to.include({ id: sub, name: 'Key Holder' });
      expect(fetches).to.be.greaterThan(0);
    });

    it('refuses an HS256 token when only the JWKS is configured', async () => {
      expectUnauthorized(await probe(server, sign(TEST_JWT_SECRET, 'HS256', undefined)));
      expectUnauthorized(await probe(server, sign(TEST_JWT_SECRET, 'HS256', 'rsa-1')));
    });

    it('refuses HS256 signed with the public key (algorithm confusion)', async () => {
      const publicPem = rsa.publicKey.export({ format: 'pem', type: 'spki' }).toString();
      const header = b64({ alg: 'HS256', typ: 'JWT', kid: 'rsa-1' });
      const payload = b64({ sub: 'mallory', exp: inAnHour(), iss: issuer, aud: audience });
      const { createHmac } = await import('node:crypto');
      const signature = createHmac('sha256', publicPem).update(`${header}.${payload}`).digest('base64url');
      expectUnauthorized(await probe(server, `${header}.${payload}.${signature}`));
    });

    it('refuses RS256 signed with a key that is not in the JWKS', async () => {
      expectUnauthorized(await probe(server, sign(stranger.privateKey, 'RS256', 'rsa-1')));
      expectUnauthorized(await probe(server, sign(stranger.privateKey, 'RS256', 'unknown-kid')));
      expectUnauthorized(await probe(server, sign(stranger.privateKey, 'RS256', undefined)));
    });

    it('refuses alg none carrying a kid of the JWKS', async () => {
      const token = `${b64({ alg: 'none', typ: 'JWT', kid: 'rsa-1' })}.${b64({ sub: 'mallory', exp: inAnHour(), iss: issuer, aud: audience })}.`;
      expectUnauthorized(await probe(server, token));
    });

    it('refuses a wrong issuer or audience, an expired token and a token without exp', async () => {
      const base = { sub: 'alice' };
      expectUnauthorized(
        await probe(
          server,
          jwt.sign(base, rsa.privateKey, { algorithm: 'RS256', keyid: 'rsa-1', expiresIn: 60, issuer: 'https://evil.example.test/', audience }),
        ),
      );
      expectUnauthorized(await probe(server, jwt.sign(base, rsa.privateKey, { algorithm: 'RS256', keyid: 'rsa-1', expiresIn: 60, issuer, audience: 'other' })));
      expectUnauthorized(
        await probe(
          server,
          jwt.sign({ ...base, exp: Math.floor(Date.now() / 1000) - 5 }, rsa.privateKey, { algorithm: 'RS256', keyid: 'rsa-1', issuer, audience }),
        ),
      );
      expectUnauthorized(await probe(server, jwt.sign(base, rsa.privateKey, { algorithm: 'RS256', keyid: 'rsa-1', issuer, audience })));
    });
  });
});
