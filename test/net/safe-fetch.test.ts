import { expect } from 'chai';
import { isAllowlisted, isPublicAddress, parseAllowlist } from '../../src/net/address-policy.ts';
import { OutboundFetchError } from '../../src/net/errors.ts';
import { safeFetch, type SafeFetchOptions } from '../../src/net/safe-fetch.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

async function refusal(promise: Promise<unknown>): Promise<OutboundFetchError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OutboundFetchError) return error;
    throw error;
  }
  throw new Error('expected the fetch to be refused');
}

describe('safe fetch (SSRF guard)', () => {
  let upstream: FakeUpstream;
  let other: FakeUpstream;
  let options: SafeFetchOptions;

  before(async () => {
    other = await startUpstream({ '/secret': (_req, res) => res.end('internal secret') });
    upstream = await startUpstream({
      '/hello.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('hello world');
      },
      '/to-other-port': (_req, res) => {
        res.writeHead(302, { location: `http://127.0.0.1:${other.port}/secret` });
        res.end();
      },
      '/to-metadata': (_req, res) => {
        res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
      },
      '/to-hello': (_req, res) => {
        res.writeHead(307, { location: '/hello.txt' });
        res.end();
      },
      '/loop': (_req, res) => {
        res.writeHead(302, { location: '/loop' });
        res.end();
      },
      '/big-chunked': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        for (let i = 0; i < 20; i++) res.write(Buffer.alloc(1024, 'a'));
        res.end();
      },
      '/big-declared': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(64 * 1024) });
        res.end(Buffer.alloc(64 * 1024, 'a'));
      },
      '/slow': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('a');
        // Never ends: only the overall time limit can stop the reader.
      },
      '/binary': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-msdownload' });
        res.end('MZ');
      },
      '/gone': (_req, res) => {
        res.writeHead(410);
        res.end();
      },
      '/unavailable': (_req, res) => {
        res.writeHead(503);
        res.end();
      },
    });
    options = {
      allowlist: parseAllowlist([`127.0.0.1:${upstream.port}`]),
      timeoutMs: 1500,
      maxBytes: 8 * 1024,
      acceptContentType: (type) => type.startsWith('text/') || type.startsWith('image/'),
    };
  });
  after(async () => {
    await upstream.close();
    await other.close();
  });

  it('fetches from an allowlisted host:port and reports what it got', async () => {
    const result = await safeFetch(`${upstream.url}/hello.txt#frag`, options);
    expect(result).to.deep.include({
      status: 200,
      contentType: 'text/plain',
      contentTypeHeader: 'text/plain; charset=utf-8',
      finalUrl: `${upstream.url}/hello.txt`,
      redirects: [],
    });
    expect(result.body.toString()).to.equal('hello world');
  });

  it('connects to the addresses it vetted when the allowlisted entry is a name', async () => {
    const result = await safeFetch(`http://localhost:${upstream.port}/hello.txt`, { ...options, allowlist: parseAllowlist([`localhost:${upstream.port}`]) });
    expect(result.body.toString()).to.equal('hello world');
  });

  it('follows redirects by hand and records each hop', async () => {
    const result = await safeFetch(`${upstream.url}/to-hello`, options);
    expect(result.finalUrl).to.equal(`${upstream.url}/hello.txt`);
    expect(result.redirects).to.deep.equal([`${upstream.url}/hello.txt`]);
    expect(result.body.toString()).to.equal('hello world');
  });

  it('refuses other ports of an allowlisted host without connecting', async () => {
    const error = await refusal(safeFetch(`http://127.0.0.1:${other.port}/secret`, options));
    expect(error).to.include({ code: 'address_not_allowed', permanent: true });
    expect(error.message).to.match(/loopback/);
    expect(other.requests).to.deep.equal([]);
  });

  for (const [label, url] of [
    ['10.x', 'http://10.1.2.3/'],
    ['172.16/12', 'http://172.20.0.1/'],
    ['192.168/16', 'http://192.168.1.1/'],
    ['cloud metadata 169.254.169.254', 'http://169.254.169.254/latest/meta-data/'],
    ['CGNAT', 'http://100.64.0.1/'],
    ['multicast', 'http://224.0.0.1/'],
    ['unspecified', 'http://0.0.0.0/'],
    ['IPv6 loopback', 'http://[::1]/'],
    ['IPv4-mapped IPv6', `http://[::ffff:127.0.0.1]:PORT/hello.txt`],
    ['IPv4-mapped IPv6 in hex', `http://[::ffff:7f00:1]:PORT/hello.txt`],
    ['NAT64', 'http://[64:ff9b::7f00:1]/'],
    ['IPv6 unique local', 'http://[fd00::1]/'],
    ['IPv6 link-local', 'http://[fe80::1]/'],
    ['decimal IPv4', 'http://2130706433:OTHER/secret'],
    ['hex IPv4', 'http://0x7f.1:OTHER/secret'],
    ['octal IPv4', 'http://0177.0.0.1:OTHER/secret'],
    ['short IPv4', 'http://127.1:OTHER/secret'],
    ['a name resolving to loopback', 'http://localhost:OTHER/secret'],
  ] as const) {
    it(`refuses ${label}`, async () => {
      const target = url.replace('PORT', String(upstream.port)).replace('OTHER', String(other.port));
      const error = await refusal(safeFetch(target, options));
      expect(error).to.include({ code: 'address_not_allowed', permanent: true });
      expect(other.requests).to.deep.equal([]);
    });
  }

  it('refuses schemes other than http and https, and credentials', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://127.0.0.1/', 'javascript:alert(1)']) {
      expect(await refusal(safeFetch(url, options))).to.include({ code: 'url_not_allowed', permanent: true });
    }
    expect(await refusal(safeFetch(`http://user:pw@127.0.0.1:${upstream.port}/hello.txt`, options))).to.include({ code: 'url_not_allowed' });
  });

  it('re-checks every redirect hop: to another loopback port, to the metadata address', async () => {
    expect(await refusal(safeFetch(`${upstream.url}/to-other-port`, options))).to.include({ code: 'address_not_allowed' });
    expect(await refusal(safeFetch(`${upstream.url}/to-metadata`, options))).to.include({ code: 'address_not_allowed' });
    expect(other.requests).to.deep.equal([]);
  });

  it('stops after 5 redirects', async () => {
    expect(await refusal(safeFetch(`${upstream.url}/loop`, options))).to.include({ code: 'too_many_redirects', permanent: true });
  });

  it('aborts bodies over the size limit, declared or streamed', async () => {
    expect(await refusal(safeFetch(`${upstream.url}/big-declared`, options))).to.include({ code: 'too_large', permanent: true });
    expect(await refusal(safeFetch(`${upstream.url}/big-chunked`, options))).to.include({ code: 'too_large', permanent: true });
  });

  it('gives up on a body that drips slower than the time limit', async () => {
    expect(await refusal(safeFetch(`${upstream.url}/slow`, { ...options, timeoutMs: 300 }))).to.include({ code: 'timeout' });
  });

  it('refuses content types outside the accepted list before reading the body', async () => {
    expect(await refusal(safeFetch(`${upstream.url}/binary`, options))).to.include({ code: 'content_type_not_allowed', permanent: true });
  });

  it('tells permanent upstream failures from transient ones', async () => {
    expect(await refusal(safeFetch(`${upstream.url}/gone`, options))).to.include({ code: 'upstream_status', permanent: true });
    expect(await refusal(safeFetch(`${upstream.url}/unavailable`, options))).to.include({ code: 'upstream_status', permanent: false });
  });

  describe('address policy', () => {
    it('accepts public unicast only', () => {
      expect(isPublicAddress('93.184.216.34')).to.equal(true);
      expect(isPublicAddress('2606:2800:220:1:248:1893:25c8:1946')).to.equal(true);
      for (const address of [
        '127.0.0.1',
        '10.0.0.1',
        '169.254.169.254',
        '100.100.100.200',
        '::1',
        '::ffff:10.0.0.1',
        'fc00::1',
        '0.0.0.0',
        '255.255.255.255',
        'not-an-ip',
      ]) {
        expect(isPublicAddress(address), address).to.equal(false);
      }
    });

    it('matches allowlist entries by host and, when given, port only', () => {
      const list = parseAllowlist(['127.0.0.1:8080', 'fake-upstream.test', '[::1]:9000']);
      expect(isAllowlisted(list, '127.0.0.1', 8080)).to.equal(true);
      expect(isAllowlisted(list, '127.0.0.1', 8081)).to.equal(false);
      expect(isAllowlisted(list, 'FAKE-UPSTREAM.test', 1)).to.equal(true);
      expect(isAllowlisted(list, '[::1]', 9000)).to.equal(true);
      expect(isAllowlisted(list, '[::ffff:7f00:1]', 8080)).to.equal(false);
    });
  });
});
