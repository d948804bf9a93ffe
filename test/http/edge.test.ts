import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { parseTrustProxy, type TrustProxy } from '../../src/config/trust-proxy.ts';
import { resolveClientAddress } from '../../src/http/middleware/client-address.ts';
import { parseConfig } from '../../src/config/load.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const errorBody = (message: string, issues: unknown[] = []) => ({ code: 'validation_failed', message, data: { issues } });

/** Writes `head` (and nothing more) on a raw connection; resolves with the whole answer once the server closes it, or what came within `waitMs`. */
function rawExchange(url: string, head: string, waitMs = 3000): Promise<{ answer: string; closedByServer: boolean }> {
  const { port, hostname } = new URL(url);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => socket.write(head));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ answer, closedByServer: false });
    }, waitMs);
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answer, closedByServer: true });
    });
    socket.on('error', reject);
  });
}

const statusLine = (answer: string) => answer.slice(0, answer.indexOf('\r\n'));
const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('the edge: client addresses, bodies after authentication, Error bodies for node’s own refusals (issue 19 item 10)', () => {
  describe('TRUST_PROXY', () => {
    const trust = (value: string) => parseTrustProxy(value) as TrustProxy;
    const table: [string, string | undefined, string, string][] = [
      // [TRUST_PROXY, X-Forwarded-For, socket peer, client address]
      ['', '203.0.113.9', '10.0.0.5', '10.0.0.5'],
      ['', undefined, '10.0.0.5', '10.0.0.5'],
      ['1', '203.0.113.9', '10.0.0.5', '203.0.113.9'],
      ['1', '198.51.100.1, 203.0.113.9', '10.0.0.5', '203.0.113.9'],
      ['1', undefined, '10.0.0.5', '10.0.0.5'],
      ['2', '198.51.100.1, 203.0.113.9, 10.0.0.7', '10.0.0.5', '203.0.113.9'],
      ['2', '203.0.113.9', '10.0.0.5', '203.0.113.9'],
      ['1', 'not-an-address', '10.0.0.5', '10.0.0.5'],
      ['10.0.0.0/8', '198.51.100.1, 203.0.113.9, 10.0.0.7', '10.0.0.5', '203.0.113.9'],
      ['10.0.0.0/8', '203.0.113.9', '192.0.2.1', '192.0.2.1'],
      ['10.0.0.5, 10.1.0.0/16', '203.0.113.9, 10.1.2.3', '10.0.0.5', '203.0.113.9'],
      ['::1, 127.0.0.1', '203.0.113.9', '::ffff:127.0.0.1', '203.0.113.9'],
      ['10.0.0.0/8', '10.0.0.9, 10.0.0.8', '10.0.0.5', '10.0.0.9'],
    ];
    for (const [setting, forwardedFor, peer, client] of table) {
      it(`TRUST_PROXY=${setting || '(unset)'}, X-Forwarded-For ${forwardedFor ?? '(none)'} from ${peer} → ${client}`, () => {
        expect(resolveClientAddress(forwardedFor, peer, trust(setting))).to.equal(client);
      });
    }

    it('refuses a value it cannot use, naming it', () => {
      expect(() => parseConfig({ TRUST_PROXY: 'yes please' })).to.throw(/TRUST_PROXY.*"yes please" is neither a hop count nor an IP address or CIDR network/s);
      expect(() => parseConfig({ TRUST_PROXY: '11' })).to.throw(/TRUST_PROXY.*a hop count must be at most 10/s);
    });
  });

  describe('in the web process', () => {
    const ctx = useServer();

    it('an unauthenticated request with a large body is answered 401 at once, without its body being read', async () => {
      // Declares 1 MiB and sends none of it: a server reading bodies before authentication would wait for it.
      const started = Date.now();
      const { answer, closedByServer } = await rawExchange(
        ctx.server.url,
        'POST /organizations HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n',
      );
      expect(statusLine(answer)).to.equal('HTTP/1.1 401 Unauthorized');
      expect(bodyOf(answer).code).to.equal('unauthorized');
      expect(answer).to.match(/\r\nConnection: close\r\n/i);
      expect(closedByServer).to.equal(true);
      expect(Date.now() - started).to.be.below(2000);
    });

    it('Expect: 100-continue is answered only once the caller is authenticated: 401 without 100 Continue, else 100 Continue and the body read', async () => {
      const head = (authorization: string) =>
        `POST /organizations HTTP/1.1\r\nHost: localhost\r\n${authorization}Content-Type: application/json\r\nContent-Length: 19\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`;
      const refused = await rawExchange(ctx.server.url, head(''));
      expect(statusLine(refused.answer)).to.equal('HTTP/1.1 401 Unauthorized');
      expect(refused.answer).not.to.include('100 Continue');

      const { port, hostname } = new URL(ctx.server.url);
      const answer = await new Promise<string>((resolve, reject) => {
        let text = '';
        const socket = connect(Number(port), hostname, () => socket.write(head(`Authorization: Bearer ${newUser().token}\r\n`)));
        socket.on('data', (chunk) => {
          text += chunk.toString('utf8');
          // The body goes only after the server asked for it.
          if (text === 'HTTP/1.1 100 Continue\r\n\r\n') socket.write('{"name":"Continue"}');
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer.startsWith('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n')).to.equal(true);
      expect(bodyOf(answer.slice('HTTP/1.1 100 Continue\r\n\r\n'.length)).organization.name).to.equal('Continue');
    });

    it('an authenticated body is read with the operation’s own limit: 413 naming it, the default for operations with a body and a small one without', async () => {
      const user = newUser();
      const big = JSON.stringify({ name: 'x'.repeat(1100 * 1024) });
      const organizations = await ctx.server.request('post', '/organizations', { token: user.token, rawBody: big });
      expect(organizations.status).to.equal(413);
      expect(organizations.body).to.deep.equal(
        errorBody('request body is too large: createOrganization takes at most 1048576 bytes (1 MiB)', [{ path: [], message: 'at most 1048576 bytes' }]),
      );
      const restore = await ctx.server.request('post', '/assets/00000000-0000-4000-8000-000000000000/restore', {
        token: user.token,
        rawBody: JSON.stringify({ padding: 'x'.repeat(4096) }),
      });
      expect(restore.status).to.equal(413);
      expect(restore.body.message).to.equal('request body is too large: restoreAsset takes at most 1024 bytes (1 KiB)');
      // Within the limit, bodies are read and validated as before.
      const small = await ctx.server.request('post', '/organizations', { token: user.token, body: { name: 'Edge test' } });
      expect(small.status).to.equal(201);
    });

    it('the OpenAPI document states each operation’s body limit and its 413', async () => {
      const { body } = await ctx.server.request('get', '/openapi.json');
      const create = body.paths['/organizations'].post;
      expect(create.requestBody.description).to.equal(
        'JSON of at most 1048576 bytes (413 beyond), read once the caller is authenticated. As in every input, no string may contain U+0000 and no object key may be `__proto__` (or `constructor` holding `prototype`): 400 naming the field.',
      );
      expect(create.responses).to.have.property('413');
      expect(body.paths['/organizations/{organization_id}/logo'].put.requestBody.description).to.equal(
        'JSON of at most 1572864 bytes (413 beyond), read once the caller is authenticated. As in every input, no string may contain U+0000 and no object key may be `__proto__` (or `constructor` holding `prototype`): 400 naming the field.',
      );
    });

    it('417: an Expect other than 100-continue is answered with the Error body', async () => {
      const res = await new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
        const req = httpRequest(new URL('/healthz', ctx.server.url), { headers: { expect: 'the-unexpected' } }, (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          response.on('end', () => resolve({ status: response.statusCode!, type: response.headers['content-type'], body: text }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(res.status).to.equal(417);
      expect(res.type).to.equal('application/json; charset=utf-8');
      expect(JSON.parse(res.body)).to.deep.equal(
        errorBody('Expect: "the-unexpected" is not supported; only 100-continue is', [{ path: ['Expect'], message: 'only 100-continue is supported' }]),
      );
    });

    it('400: an HTTP/1.1 request without Host is answered with the Error body (HTTP/1.0 needs none)', async () => {
      const { answer } = await rawExchange(ctx.server.url, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
      expect(statusLine(answer)).to.equal('HTTP/1.1 400 Bad Request');
      expect(answer).to.match(/\r\nContent-Type: application\/json; charset=utf-8\r\n/i);
      expect(bodyOf(answer)).to.deep.equal(errorBody('Host: the header is required in HTTP/1.1', [{ path: ['Host'], message: 'required in HTTP/1.1' }]));
      const old = await rawExchange(ctx.server.url, 'GET /healthz HTTP/1.0\r\n\r\n');
      expect(statusLine(old.answer)).to.equal('HTTP/1.1 200 OK');
    });
  });
});
