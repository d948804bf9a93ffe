import { signedIn } from '../../src/http/authorize.ts';
import { expect } from 'chai';
import { defineRoute } from '../../src/http/route.ts';
import { apiRoutes } from '../../src/app/routes.ts';
import { newUser, startTestServer, type ApiResponse, type TestServer } from '../support/server.ts';

/** Every error answer has exactly the Error body of CONVENTIONS §3. */
function expectErrorBody(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/json/);
  expect(Object.keys(res.body).sort()).to.deep.equal(['code', 'data', 'message']);
  expect(res.body.code).to.equal(code);
  expect(res.body.message).to.be.a('string').that.is.not.empty;
  expect(Object.keys(res.body.data)).to.deep.equal(['issues']);
  expect(res.body.data.issues).to.be.an('array');
  for (const issue of res.body.data.issues) {
    expect(Object.keys(issue).sort()).to.deep.equal(['message', 'path']);
    expect(issue.path).to.be.an('array');
  }
}

const secretDetail = 'db password is hunter2 at /srv/app/secret.ts';

// Mounted only in this test's server: an operation that fails the way a bug does.
const failingRoute = defineRoute({
  method: 'get',
  path: '/test-only/explode',
  operationId: 'testExplode',
  summary: 'Throws an unexpected error',
  tag: 'Service',
  response: { status: 200, description: 'never' },
  authorize: signedIn('a test route'),
  handler: async () => {
    throw new TypeError(secretDetail);
  },
});

describe('HTTP conventions', () => {
  let server: TestServer;
  const alice = newUser();

  before(async () => {
    server = await startTestServer({}, { extraRoutes: [failingRoute] });
  });
  after(async () => server.stop());

  describe('Service-Api-Version', () => {
    for (const version of [undefined, '1', '1.4']) {
      it(`serves a request with ${version === undefined ? 'no header' : `version ${version}`}`, async () => {
        const res = await server.request('post', '/organizations', {
          token: alice.token,
          body: { name: 'Versioned' },
          headers: version === undefined ? {} : { 'Service-Api-Version': version },
        });
        expect(res.status).to.equal(201);
        expect(res.headers.get('service-api-version')).to.equal('1');
      });
    }

    for (const version of ['2', 'abc', '1a', '0.9']) {
      it(`refuses version ${version} with 400 unsupported_api_version`, async () => {
        const res = await server.request('get', '/organizations/available-slug', {
          token: alice.token,
          query: { slug: 'x' },
          headers: { 'Service-Api-Version': version },
        });
        expectErrorBody(res, 400, 'unsupported_api_version');
        expect(res.body.message).to.include(JSON.stringify(version));
        expect(res.body.data.issues).to.deep.equal([{ path: ['Service-Api-Version'], message: 'must be 1 or 1.x' }]);
      });
    }

    it('refuses an unsupported version before authentication (no token needed to learn it)', async () => {
      const res = await server.request('get', '/organizations/available-slug', { query: { slug: 'x' }, headers: { 'Service-Api-Version': '2' } });
      expectErrorBody(res, 400, 'unsupported_api_version');
    });
  });

  describe('X-Request-Id', () => {
    it('echoes a sane incoming id, on success and on errors', async () => {
      const ok = await server.request('get', '/healthz', { headers: { 'X-Request-Id': 'client-req.42:a_b' } });
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('x-request-id')).to.equal('client-req.42:a_b');
      const failed = await server.request('get', '/organizations/nope', { headers: { 'X-Request-Id': 'abc-123' } });
      expect(failed.status).to.equal(401);
      expect(failed.headers.get('x-request-id')).to.equal('abc-123');
    });

    it('generates a UUID when the incoming id is absent, too long or has odd characters', async () => {
      const seen = new Set<string>();
      for (const headers of [{}, { 'X-Request-Id': 'x'.repeat(129) }, { 'X-Request-Id': 'has space' }, { 'X-Request-Id': '<script>' }] as Record<
        string,
        string
      >[]) {
        const res = await server.request('get', '/healthz', { headers });
        const id = res.headers.get('x-request-id')!;
        expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        seen.add(id);
      }
      expect(seen.size).to.equal(4);
    });
  });

  describe('request bodies', () => {
    it('answers malformed JSON with 400 validation_failed', async () => {
      const res = await server.request('post', '/organizations', { token: alice.token, rawBody: '{"name": "Acme",' });
      expectErrorBody(res, 400, 'validation_failed');
    });

    it('rejects an unknown body field with 400 naming it', async () => {
      const res = await server.request('post', '/organizations', { token: alice.token, body: { name: 'Acme', plan: 'gold' } });
      expectErrorBody(res, 400, 'validation_failed');
      expect(res.body.message).to.include('plan');
      expect(res.body.data.issues).to.have.length(1);
    });

    it('rejects a JSON array or scalar where an object is expected', async () => {
      for (const rawBody of ['[1,2]', '"text"', '42']) {
        const res = await server.request('post', '/organizations', { token: alice.token, rawBody });
        expectErrorBody(res, 400, 'validation_failed');
      }
    });

    it('rejects a body on an operation that takes none', async () => {
      const res = await server.request('post', `/organizations/${'x'.repeat(8)}/onboarded`, { token: alice.token, body: { now: true } });
      expectErrorBody(res, 400, 'validation_failed');
      expect(res.body.message).to.equal('body: this operation takes no request body');
    });
  });

  describe('errors', () => {
    it('answers an unknown path with a 404 Error body', async () => {
      const res = await server.request('get', '/no/such/operation', { token: alice.token });
      expectErrorBody(res, 404, 'not_found');
      expect(res.body.data.issues).to.deep.equal([]);
    });

    it('answers an unexpected exception with 500 internal, without the exception in the body', async () => {
      const res = await server.request('get', '/test-only/explode', { token: alice.token, headers: { 'X-Request-Id': 'boom-1' } });
      expectErrorBody(res, 500, 'internal');
      expect(res.body).to.deep.equal({ code: 'internal', message: 'internal error; the request id identifies it in the logs', data: { issues: [] } });
      const text = JSON.stringify(res.body);
      for (const leak of ['hunter2', 'TypeError', 'secret.ts', ' at ']) expect(text).not.to.include(leak);
      expect(res.headers.get('x-request-id')).to.equal('boom-1');
    });
  });

  describe('plumbing without a token', () => {
    it('GET /healthz', async () => {
      const res = await server.request('get', '/healthz');
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ status: 'ok' });
    });

    it('GET /readyz when the database and queue answer', async () => {
      const res = await server.request('get', '/readyz');
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ status: 'ok', database: 'ok', queue: 'ok' });
    });

    it('GET /openapi.json is OpenAPI 3.1 and lists every operation of the API', async () => {
      const res = await server.request('get', '/openapi.json');
      expect(res.status).to.equal(200);
      expect(res.body.openapi).to.equal('3.1.0');
      expect(res.body.components.securitySchemes.bearerAuth).to.deep.equal({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
      const documented = new Map<string, any>();
      for (const [path, item] of Object.entries<Record<string, any>>(res.body.paths)) {
        for (const [method, operation] of Object.entries(item)) documented.set(`${method} ${path}`, operation);
      }
      expect(apiRoutes.length).to.be.greaterThan(0);
      for (const route of apiRoutes) {
        const operation = documented.get(`${route.method} ${route.path}`);
        expect(operation, `${route.method} ${route.path}`).to.not.equal(undefined);
        expect(operation.operationId).to.equal(route.operationId);
        expect(operation.security).to.deep.equal([{ bearerAuth: [] }]);
        expect(Object.keys(operation.responses)).to.include.members([String(route.response.status), '400', '401', '429', '500']);
      }
      expect(documented.get('get /healthz').security).to.deep.equal([]);
      // Test-only operations stay out of the public document.
      expect(documented.has('get /test-only/explode')).to.equal(false);
    });

    it('every other path needs a token', async () => {
      const res = await server.request('get', '/organizations/available-slug', { query: { slug: 'x' } });
      expectErrorBody(res, 401, 'unauthorized');
    });
  });
});
