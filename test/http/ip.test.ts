import { describe, expect, it } from 'vitest';
import { ipLimitKey, lastNormalizedIp, normalizeIp } from '../../src/http/ip.js';

describe('normalizeIp', () => {
  it.each([
    // uWS reports IPv4 peers as IPv4-mapped IPv6 in the long form.
    ['0000:0000:0000:0000:0000:ffff:7f00:0001', '127.0.0.1'],
    ['0000:0000:0000:0000:0000:FFFF:C0A8:0A01', '192.168.10.1'],
    ['0000:0000:0000:0000:0000:ffff:0a00:00ff', '10.0.0.255'],
    // Long IPv6 forms compress to RFC 5952.
    ['0000:0000:0000:0000:0000:0000:0000:0001', '::1'],
    ['0000:0000:0000:0000:0000:0000:0000:0000', '::'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:0DB8:0000:0000:0000:0000:0000:0000', '2001:db8::'],
    ['fe80:0000:0000:0000:0202:b3ff:fe1e:8329', 'fe80::202:b3ff:fe1e:8329'],
    // A single zero group is not compressed.
    ['2001:0db8:0000:0001:0001:0001:0001:0001', '2001:db8:0:1:1:1:1:1'],
    // The longest run is compressed; of equal runs, the first.
    ['2001:0db8:0000:0000:0001:0000:0000:0000', '2001:db8:0:0:1::'],
    ['2001:0000:0000:0001:0000:0000:0001:0001', '2001::1:0:0:1:1'],
    ['2001:0db8:0001:0002:0003:0004:0005:0006', '2001:db8:1:2:3:4:5:6'],
  ])('%s -> %s', (raw, expected) => {
    expect(normalizeIp(raw)).toBe(expected);
  });

  it('leaves IPv4 and already short IPv6 forms alone (lower-cased)', () => {
    expect(normalizeIp('203.0.113.9')).toBe('203.0.113.9');
    expect(normalizeIp('::1')).toBe('::1');
    expect(normalizeIp('2001:DB8::1')).toBe('2001:db8::1');
  });
});

describe('lastNormalizedIp (the front door\'s peer, issue 17)', () => {
  it('answers as normalizeIp for every address, whether it repeats or alternates', () => {
    const peer = lastNormalizedIp();
    const v4 = '0000:0000:0000:0000:0000:ffff:7f00:0001';
    const v6 = '2001:0db8:0000:0000:0000:0000:0000:0001';
    for (const raw of [v4, v4, v6, v6, v4, '203.0.113.9', v4, '', v6]) expect(peer(raw)).toBe(normalizeIp(raw));
    expect(peer(v4)).toBe('127.0.0.1');
    expect(peer(v6)).toBe('2001:db8::1');
  });
});

describe('ipLimitKey', () => {
  it('counts an IPv6 client by its /64 and an IPv4 client by its address, also written the IPv6 way', () => {
    expect(ipLimitKey('203.0.113.7')).toBe('203.0.113.7');
    expect(ipLimitKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(ipLimitKey('2001:db8:1:2:ffff::18')).toBe('2001:db8:1:2::/64');
    expect(ipLimitKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    // Two IPv4 clients behind a proxy that writes them mapped must not share one count.
    expect(ipLimitKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ipLimitKey('::ffff:192.0.2.2')).toBe('192.0.2.2');
    expect(ipLimitKey('not an address')).toBe('not an address');
  });
});
