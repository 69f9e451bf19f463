/**
 * The outbound rule of the product: which destinations the service may fetch from or post to.
 * Production refuses everything but public unicast unless `security.outbound.allow_private_networks`;
 * development and test also allow loopback (CONTRACT.md "Development conveniences").
 */
import { addressKind, type AddressKind } from './address.js';

export interface OutboundPolicy {
  /** Loopback, RFC 1918, link-local, unique-local, mapped, NAT64, reserved ranges. */
  readonly allowPrivateNetworks: boolean;
  /** 127/8 and ::1 (and their mapped forms). */
  readonly allowLoopback: boolean;
}

/** The settings the rule reads (a structural type: the configuration floor checks URLs with it too). */
export interface OutboundSettings {
  node_env: string;
  security: { outbound: { allow_private_networks: boolean } };
}

export function outboundPolicy(config: OutboundSettings): OutboundPolicy {
  const allowPrivateNetworks = config.security.outbound.allow_private_networks;
  const development = config.node_env === 'development' || config.node_env === 'test';
  return { allowPrivateNetworks, allowLoopback: allowPrivateNetworks || development };
}

export class OutboundRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

export function kindAllowed(kind: AddressKind, policy: OutboundPolicy): boolean {
  switch (kind) {
    case 'public':
      return true;
    case 'loopback':
      return policy.allowLoopback;
    case 'private':
      return policy.allowPrivateNetworks;
    case 'never':
      return false;
  }
}

/** Host names that name this machine whatever DNS says (RFC 6761 section 6.3). */
function isLoopbackName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/**
 * What can be decided without DNS: the scheme (http/https only), no credentials in the URL, and
 * the host when it is an address literal or a loopback name. Returns the reason for refusing, or
 * undefined. Used at client creation/registration and before every request.
 */
export function urlProblem(raw: string | URL, policy: OutboundPolicy): string | undefined {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    return 'not a valid URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'only http and https URLs may be fetched';
  if (url.username || url.password) return 'URLs with credentials are not fetched';
  const host = url.hostname;
  if (!host) return 'the URL has no host';
  const kind = addressKind(host) ?? (isLoopbackName(host) ? 'loopback' : undefined);
  if (kind && !kindAllowed(kind, policy)) return refusalText(kind);
  return undefined;
}

export function refusalText(kind: AddressKind): string {
  return kind === 'never'
    ? 'the target is not a unicast address'
    : `the target is a ${kind === 'loopback' ? 'loopback' : 'private or special-purpose'} address (security.outbound.allow_private_networks is off)`;
}
