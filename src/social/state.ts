/**
 * The `state` of an upstream authorization request: everything the callback needs, sealed
 * (AES-256-GCM under a key derived for the tenant, so the PKCE verifier and nonce are unreadable
 * upstream and a state of one tenant does not open at another), expiring, single use (its `jti`
 * is claimed in the tenant's replay store at the callback), and bound to the browser that started
 * the flow by a cookie holding a MAC of the jti (a callback URL sent to someone else fails).
 *
 * With the `_ops` relay (multi-tenant mode, `features.social_login.relay`), the sealed state is
 * wrapped in the platform's signed relay envelope (tenancy/ops.ts RelayState) naming the tenant:
 * `_ops` reads only the envelope (it stays stateless) and the tenant checks both layers.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Sealer } from '../keys/sealer.js';

/** An upstream sign-in may take a while (account chooser, MFA at the provider). */
export const STATE_TTL_S = 900;

export interface FlowState {
  tenant: string;
  provider: string;
  /** The interaction (sign-in request) to complete. */
  uid: string;
  nonce: string;
  verifier: string;
  jti: string;
  /** Seconds since the epoch. */
  exp: number;
}

export class StateCodec {
  private readonly sealer: Sealer;
  private readonly macKey: Buffer;

  constructor(
    root: Sealer,
    private readonly tenant: string,
  ) {
    this.sealer = new Sealer(root.derive(`social-state:${tenant}`));
    this.macKey = root.derive(`social-binding:${tenant}`);
  }

  create(provider: string, uid: string, nowMs = Date.now()): { state: string; flow: FlowState } {
    const flow: FlowState = {
      tenant: this.tenant,
      provider,
      uid,
      nonce: randomBytes(16).toString('base64url'),
      verifier: randomBytes(32).toString('base64url'),
      jti: randomBytes(16).toString('base64url'),
      exp: Math.floor(nowMs / 1000) + STATE_TTL_S,
    };
    const plain = JSON.stringify({ t: flow.tenant, p: flow.provider, u: flow.uid, n: flow.nonce, v: flow.verifier, j: flow.jti, e: flow.exp });
    return { state: this.sealer.seal(plain, 'social-state'), flow };
  }

  /** The flow, or a reason it is refused (forged, of another tenant or provider, expired). */
  read(state: string, provider: string, nowMs = Date.now()): FlowState | 'invalid' | 'expired' | 'wrong_provider' {
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(this.sealer.unseal(state, 'social-state')) as Record<string, unknown>;
    } catch {
      return 'invalid';
    }
    const { t, p, u, n, v, j, e } = raw;
    if (typeof t !== 'string' || typeof p !== 'string' || typeof u !== 'string' || typeof n !== 'string' || typeof v !== 'string' || typeof j !== 'string' || typeof e !== 'number') return 'invalid';
    if (t !== this.tenant) return 'invalid';
    if (p !== provider) return 'wrong_provider';
    if (e * 1000 <= nowMs) return 'expired';
    return { tenant: t, provider: p, uid: u, nonce: n, verifier: v, jti: j, exp: e };
  }

  /** The browser-binding cookie value of a flow. */
  binding(jti: string): string {
    return createHmac('sha256', this.macKey).update(jti).digest('base64url');
  }

  bindingValid(jti: string, cookie: string | undefined): boolean {
    if (!cookie) return false;
    const a = Buffer.from(this.binding(jti));
    const b = Buffer.from(cookie);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
