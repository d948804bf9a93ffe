import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request through node:http, which (unlike fetch) sends any method and any header size. */
function raw(url: string, method: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, url), { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const errorBody = (code: string, message: string) => ({ code, message, data: { issues: [] } });

describe('every status ≥ 400 answers the JSON Error body', () => {
  const ctx = useServer();

  it('431: a 20 KB header, refused by the HTTP parser before the app', async () => {
    const res = await raw(ctx.server.url, 'GET', '/healthz', { 'x-padding': 'a'.repeat(20 * 1024) });
    expect(res.status).to.equal(431);
    expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).to.deep.equal(errorBody('validation_failed', 'request headers are too large (at most 16 KiB in all)'));
  });

  it('TRACE is a 405 with code method_not_allowed', async () => {
    const user = newUser();
    const res = await raw(ctx.server.url, 'TRACE', '/organizations', { authorization: `Bearer ${user.token}` });
    expect(res.status).to.equal(405);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    const body = JSON.parse(res.body);
    expect(body.code).to.equal('method_not_allowed');
    expect(body.message).to.match(/^method TRACE is not allowed on \/organizations; allowed: /);
    expect(body.data).to.deep.equal({ issues: [] });
  });

  it('405: a known path with a method it does not take, with Allow', async () => {
    const user = newUser();
    const res = await ctx.server.request('delete', '/organizations', { token: user.token });
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.match(/POST/);
    expect(res.body).to.deep.equal(errorBody('method_not_allowed', `method DELETE is not allowed on /organizations; allowed: ${res.headers.get('allow')}`));
  });

  it('404: an unknown path', async () => {
    const user = newUser();
    const res = await ctx.server.request('get', '/no-such-thing', { token: user.token });
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal(errorBody('not_found', 'no operation GET /no-such-thing'));
  });

  it('413: a body over the operation’s limit, naming it', async () => {
    const user = newUser();
    const res = await ctx.server.request('post', '/organizations', { token: user.token, rawBody: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }) });
    expect(res.status).to.equal(413);
    expect(res.body).to.deep.equal({
      code: 'validation_failed',
      message: 'request body is too large: createOrganization takes at most 1048576 bytes (1 MiB)',
      data: { issues: [{ path: [], message: 'at most 1048576 bytes' }] },
    });
  });

  it('400: malformed HTTP refused by the parser', async () => {
    const { connect } = await import('node:net');
    const url = new URL(ctx.server.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write('GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('utf8')));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).to.deep.equal(errorBody('validation_failed', 'request is not well-formed HTTP'));
  });
});
