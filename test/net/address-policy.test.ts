import { expect } from 'chai';
import { addressRange, isPublicAddress } from '../../src/net/address-policy.ts';
import { OutboundFetchError } from '../../src/net/errors.ts';
import { safeFetch } from '../../src/net/safe-fetch.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

/** [address, allowed, range named in the refusal] */
const table: [string, boolean, string][] = [
  // Plain IPv4 and IPv6.
  ['93.184.216.34', true, 'unicast'],
  ['2606:2800:220:1:248:1893:25c8:1946', true, 'unicast'],
  ['127.0.0.1', false, 'loopback'],
  ['10.1.2.3', false, 'private'],
  ['169.254.169.254', false, 'linkLocal'],
  // IPv4-compatible (deprecated ::a.b.c.d): the address of issue 19, dotted and hex.
  ['::127.0.0.1', false, 'loopback (IPv4 127.0.0.1 inside an IPv4-compatible IPv6 address (::a.b.c.d))'],
  ['::7f00:1', false, 'loopback (IPv4 127.0.0.1 inside an IPv4-compatible IPv6 address (::a.b.c.d))'],
  ['::a9fe:a9fe', false, 'linkLocal (IPv4 169.254.169.254 inside an IPv4-compatible IPv6 address (::a.b.c.d))'],
  ['::10.0.0.1', false, 'private (IPv4 10.0.0.1 inside an IPv4-compatible IPv6 address (::a.b.c.d))'],
  ['::2', false, 'unspecified (IPv4 0.0.0.2 inside an IPv4-compatible IPv6 address (::a.b.c.d))'],
  ['::93.184.216.34', true, 'unicast'],
  // IPv4-mapped, dotted and hex, and its RFC 6145 sibling.
  ['::ffff:127.0.0.1', false, 'loopback (IPv4 127.0.0.1 inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d))'],
  ['::ffff:7f00:1', false, 'loopback (IPv4 127.0.0.1 inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d))'],
  ['0:0:0:0:0:ffff:c0a8:0101', false, 'private (IPv4 192.168.1.1 inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d))'],
  ['::ffff:93.184.216.34', true, 'unicast'],
  ['::ffff:0:7f00:1', false, 'loopback (IPv4 127.0.0.1 inside an IPv4-translated IPv6 address (::ffff:0:a.b.c.d))'],
  // NAT64 well-known prefix; its local-use /48 is refused whole.
  ['64:ff9b::127.0.0.1', false, 'loopback (IPv4 127.0.0.1 inside a NAT64 address (64:ff9b::/96))'],
  ['64:ff9b::a9fe:a9fe', false, 'linkLocal (IPv4 169.254.169.254 inside a NAT64 address (64:ff9b::/96))'],
  ['64:ff9b::5db8:d822', true, 'unicast'],
  ['64:ff9b:1::7f00:1', false, 'rfc6052'],
  ['64:ff9b:1:2::5db8:d822', false, 'rfc6052'],
  // 6to4: the IPv4 address in bits 16–47.
  ['2002:7f00:1::1', false, 'loopback (IPv4 127.0.0.1 inside a 6to4 address (2002::/16))'],
  ['2002:a00:1::', false, 'private (IPv4 10.0.0.1 inside a 6to4 address (2002::/16))'],
  ['2002:5db8:d822::1', true, 'unicast'],
  // Teredo: the client's IPv4 address is the last 32 bits XOR 0xffffffff (80ff:fffe → 127.0.0.1); the server in bits 32–63.
  ['2001:0:5db8:d822:8000:63bf:80ff:fffe', false, 'loopback (IPv4 127.0.0.1, 93.184.216.34 inside a Teredo address (2001::/32))'],
  ['2001:0:a00:1:8000:63bf:a247:27dd', false, 'private (IPv4 93.184.216.34, 10.0.0.1 inside a Teredo address (2001::/32))'],
  ['2001:0:5db8:d822:8000:63bf:a247:27dd', true, 'unicast'],
  // Other special IPv6 ranges.
  ['::1', false, 'loopback'],
  ['::', false, 'unspecified'],
  ['fe80::1', false, 'linkLocal'],
  ['fc00::1', false, 'uniqueLocal'],
  ['fd12:3456:789a::1', false, 'uniqueLocal'],
  ['ff02::1', false, 'multicast'],
  ['fec0::1', false, 'deprecatedSiteLocal'],
  ['2001:db8::1', false, 'reserved'],
  ['3fff::1', false, 'reserved'],
  ['100::1', false, 'discard'],
  ['not-an-ip', false, 'invalid'],
];

describe('address policy: every IPv6 form that carries an IPv4 address is judged by that address', () => {
  for (const [address, allowed, range] of table) {
    it(`${address} → ${allowed ? 'allowed' : `refused (${range})`}`, () => {
      expect(isPublicAddress(address)).to.equal(allowed);
      expect(addressRange(address)).to.equal(range);
    });
  }

  describe('safe fetch of an IPv4-compatible loopback literal', () => {
    let upstream: FakeUpstream;
    before(async () => {
      upstream = await startUpstream({ '/secret': (_req, res) => res.end('internal secret') });
    });
    after(() => upstream.close());

    it('http://[::127.0.0.1]/ is refused before any connection', async () => {
      const refused = await safeFetch(`http://[::127.0.0.1]:${upstream.port}/secret`, { allowlist: [], timeoutMs: 1000, maxBytes: 1024 }).then(
        () => expect.fail('the fetch should be refused'),
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(OutboundFetchError);
      expect(refused).to.include({
        code: 'address_not_allowed',
        message: `::7f00:1 resolves to a loopback (IPv4 127.0.0.1 inside an IPv4-compatible IPv6 address (::a.b.c.d)) address, which is not allowed (server-side fetches reach public addresses only; an operator may open [::7f00:1]:${upstream.port} with OUTBOUND_ALLOWLIST)`,
        permanent: true,
      });
      expect(upstream.requests).to.deep.equal([]);
    });
  });
});
