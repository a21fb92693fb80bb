/**
 * Source addresses for per-source limits (server/http/client-address.ts): canonical forms of
 * what the transports report (node's `::ffff:a.b.c.d`, uWebSockets' long hex form), IPv6 /64
 * keys, the rightmost-untrusted walk of X-Forwarded-For, and the SLIPWAY_TRUSTED_PROXIES and
 * SLIPWAY_INSPECT_* settings refused with a message naming them.
 */
import t from 'tap';
import { canonicalAddress, parseTrustedProxies, sourceKey, SourceAddresses } from '../../server/http/client-address.js';
import { inspectLimitsOf, loadConfig } from '../../server/config.js';

t.test('canonical addresses and source keys', async (t) => {
  t.equal(canonicalAddress('127.0.0.1'), '127.0.0.1');
  t.equal(canonicalAddress('::ffff:127.0.0.2'), '127.0.0.2', 'IPv4-mapped, node form');
  t.equal(canonicalAddress('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1', 'IPv4-mapped, uWebSockets form');
  t.equal(canonicalAddress('2001:0DB8:0000:0000:0000:0000:0000:0001'), '2001:db8::1', 'IPv6 lowercased and compressed');
  t.equal(canonicalAddress('[fe80::1%eth0]'), 'fe80::1', 'brackets and zone dropped');
  t.equal(canonicalAddress('not an address'), '');
  t.equal(canonicalAddress(''), '');
  t.equal(sourceKey('198.51.100.7'), '198.51.100.7');
  t.equal(sourceKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(sourceKey('2001:db8:1:2::ffff'), sourceKey('2001:db8:1:2:ffff:ffff:ffff:1'), 'one /64, one key');
  t.not(sourceKey('2001:db8:1:3::1'), sourceKey('2001:db8:1:2::1'));
});

t.test('X-Forwarded-For is read only from trusted proxies, rightmost untrusted first', async (t) => {
  const none = new SourceAddresses([]);
  t.equal(none.of('::ffff:192.0.2.1', '203.0.113.5'), '192.0.2.1', 'no trusted proxies: the peer, whatever is forwarded');
  const lb = new SourceAddresses(parseTrustedProxies('10.0.0.0/8, 127.0.0.1, fd00::/8', 'x'));
  t.equal(lb.of('127.0.0.1', ''), '127.0.0.1', 'a trusted peer without the header is the source');
  t.equal(lb.of('127.0.0.1', '203.0.113.5'), '203.0.113.5');
  t.equal(lb.of('127.0.0.1', '1.2.3.4, 203.0.113.5, 10.9.9.9'), '203.0.113.5', 'trusted hops skipped; what the client wrote is not believed');
  t.equal(lb.of('fd00::2', '10.1.1.1, 10.2.2.2'), '10.1.1.1', 'all hops trusted: the leftmost');
  t.equal(lb.of('127.0.0.1', 'garbage, 10.2.2.2'), '10.2.2.2', 'a malformed hop: the last one a trusted proxy vouched for');
  t.equal(lb.of('192.0.2.9', '203.0.113.5'), '192.0.2.9', 'an untrusted peer is the source');
});

t.test('settings', async (t) => {
  t.same(loadConfig({}).trustedProxies, []);
  t.same(loadConfig({ SLIPWAY_TRUSTED_PROXIES: 'none' }).trustedProxies, []);
  t.same(loadConfig({ SLIPWAY_TRUSTED_PROXIES: '10.0.0.0/8,::1' }).trustedProxies, ['10.0.0.0/8', '::1']);
  t.throws(() => loadConfig({ SLIPWAY_TRUSTED_PROXIES: '10.0.0.0/33' }), /SLIPWAY_TRUSTED_PROXIES: expected IP addresses or CIDR ranges.*"10.0.0.0\/33" is not an IP address or CIDR range/);
  t.throws(() => loadConfig({ SLIPWAY_TRUSTED_PROXIES: 'lb.internal' }), /SLIPWAY_TRUSTED_PROXIES/);
  t.throws(() => loadConfig({ SLIPWAY_CLI_LOGINS_PER_SOURCE: '0' }), /SLIPWAY_CLI_LOGINS_PER_SOURCE: expected an integer 1-1000, got "0"/);
  t.same(inspectLimitsOf(loadConfig({})), { maxInflatedBytes: 8 * 1024 ** 3, maxEntries: 500_000, maxSeconds: 20 }, 'documented defaults');
  t.same(inspectLimitsOf(loadConfig({ SLIPWAY_INSPECT_LAYER_MAX_MIB: '256', SLIPWAY_INSPECT_LAYER_MAX_ENTRIES: '1000', SLIPWAY_INSPECT_LAYER_SECONDS: '0.5' })),
    { maxInflatedBytes: 256 * 1024 * 1024, maxEntries: 1000, maxSeconds: 0.5 });
  t.throws(() => loadConfig({ SLIPWAY_INSPECT_LAYER_SECONDS: '0' }), /SLIPWAY_INSPECT_LAYER_SECONDS: expected a number of seconds above 0/);
  t.throws(() => loadConfig({ SLIPWAY_INSPECT_THREADS: 'many' }), /SLIPWAY_INSPECT_THREADS/);
});
