/**
 * What kind of network an IP address belongs to, parsed with ipaddr.js (never by comparing
 * strings: `::ffff:7f00:1`, `::ffff:127.0.0.1` and `0:0:0:0:0:ffff:7f00:0001` are one address).
 * Only globally routable unicast counts as `public`; addresses that embed an IPv4 address
 * (IPv4-mapped, IPv4-translated, NAT64, 6to4, Teredo) are judged by what they can reach, and never
 * count as public because a gateway decides where they land.
 */
import ipaddr from 'ipaddr.js';

/**
 * - `public`: global unicast;
 * - `loopback`: 127/8, ::1, and mapped/translated forms of 127/8;
 * - `private`: RFC 1918, link-local, unique-local, CGNAT, reserved/documentation, mapped, NAT64, ...;
 * - `never`: unspecified, broadcast and multicast, which are no HTTP server's address.
 */
export type AddressKind = 'public' | 'loopback' | 'private' | 'never';

function kindOfV4(v4: ipaddr.IPv4): AddressKind {
  const range = v4.range();
  if (range === 'unicast') return 'public';
  if (range === 'loopback') return 'loopback';
  if (range === 'unspecified' || range === 'broadcast' || range === 'multicast') return 'never';
  return 'private';
}

/** The IPv4 address an IPv6 one carries, when its range is one that embeds IPv4. */
function embeddedV4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = v6.range();
  const p = v6.parts;
  const fromLast32 = () => new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
  if (range === 'ipv4Mapped') return v6.toIPv4Address();
  if (range === 'rfc6145' || range === 'rfc6052') return fromLast32();
  // IPv4-compatible (::a.b.c.d, deprecated) lands on the IPv4 address too.
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 && (p[6] !== 0 || p[7]! > 1)) return fromLast32();
  if (range === '6to4') return new ipaddr.IPv4([p[1]! >> 8, p[1]! & 0xff, p[2]! >> 8, p[2]! & 0xff]);
  return undefined;
}

/** Classifies a literal IPv4 or IPv6 address (brackets and zone ids allowed); undefined if not one. */
export function addressKind(literal: string): AddressKind | undefined {
  const text = literal.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(text)) return undefined;
  // A zone id (fe80::1%eth0) only exists on link-local addresses.
  if (text.includes('%')) return 'private';
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(text);
  } catch {
    return undefined;
  }
  if (addr.kind() === 'ipv4') {
    // ipaddr.isValid also accepts classful shorthands ("127.1", "0x7f.1"); they parse to the real address.
    return kindOfV4(addr as ipaddr.IPv4);
  }
  const v6 = addr as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'loopback') return 'loopback';
  if (range === 'unspecified' || range === 'multicast') return 'never';
  const inner = embeddedV4(v6);
  if (inner) {
    const k = kindOfV4(inner);
    return k === 'public' ? 'private' : k;
  }
  // Teredo tunnels to an address chosen by the relay: never public.
  if (range !== 'unicast') return 'private';
  // Only 2000::/3 is global unicast today.
  return (v6.parts[0]! & 0xe000) === 0x2000 ? 'public' : 'private';
}
