/**
 * The client's address behind trusted reverse proxies (HTTP_TRUSTED_PROXIES, issue 12 item 7).
 * `X-Forwarded-For` counts only when the TCP peer is a trusted proxy; it is then read from the
 * right, skipping trusted hops, and the first untrusted address is the client (entries further
 * left were written by whoever sent the request and prove nothing). With no trusted proxies (the
 * default) the header is ignored and the peer is the client. Every consumer (per-IP limits, audit
 * `ip_address`, oidc-provider through the bridge) reads the one value computed here.
 */
import ipaddr from 'ipaddr.js';
import { normalizeIp } from './ip.js';

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses `10.0.0.0/8`, `2001:db8::/32` or a single address; throws naming the bad entry. */
export function parseCidrList(entries: readonly string[]): Cidr[] {
  return entries.map((raw) => {
    const e = raw.trim();
    try {
      if (e.includes('/')) return ipaddr.parseCIDR(e);
      const addr = ipaddr.parse(e);
      return [addr, addr.kind() === 'ipv4' ? 32 : 128] as Cidr;
    } catch {
      throw new Error(`'${e}' is not an IP address or CIDR range`);
    }
  });
}

function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  let t = text.trim();
  // "[2001:db8::1]:443" and "192.0.2.1:443" (some proxies add the port).
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(t);
  if (bracket) t = bracket[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(t)) t = t.slice(0, t.lastIndexOf(':'));
  if (!ipaddr.isValid(t)) return undefined;
  const a = ipaddr.parse(t);
  // One form per address: ::ffff:a.b.c.d is a.b.c.d.
  return a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
}

export type ClientIpOf = (peer: string, headers: Readonly<Record<string, string>>) => string;

export function clientIpResolver(trusted: readonly string[]): ClientIpOf {
  const ranges = parseCidrList(trusted);
  if (!ranges.length) return (peer) => peer;
  const isTrusted = (a: ipaddr.IPv4 | ipaddr.IPv6) => ranges.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
  return (peer, headers) => {
    const peerAddr = parseAddress(peer);
    if (!peerAddr || !isTrusted(peerAddr)) return peer;
    const header = headers['x-forwarded-for'];
    if (!header) return peer;
    const hops = header.split(',');
    // Bounded: a proxy chain is a handful of hops; a huge header is read only from its right end.
    let client = peer;
    for (let i = hops.length - 1, seen = 0; i >= 0 && seen < 32; i--, seen++) {
      const addr = parseAddress(hops[i]!);
      if (!addr) break; // garbage: the last good hop stands
      client = normalizeIp(addr.toString());
      if (!isTrusted(addr)) break;
    }
    return client;
  };
}
