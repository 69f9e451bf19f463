/**
 * OIDC Back-Channel Logout 1.0 delivery (CONTRACT.md): a logout_token (iss, aud, iat, exp = iat +
 * 120 s, jti, sub, sid, events) signed like the client's ID tokens, POSTed form-encoded, 3 attempts
 * at 0 s, 2 s and 10 s, each outcome audited. Runs in the background: sign-out never waits for it.
 */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../context.js';
import type { SigningAlg } from '../config/schema.js';
import { signJwt } from '../keys/jwt.js';
import { outboundFetch, outboundPolicy } from '../outbound/index.js';
import type { KeySet } from '../keys/keystore.js';
import type { TenantId } from '../storage/types.js';
import { pairwiseSubject } from './pairwise.js';

export const RETRY_OFFSETS_MS = [0, 2000, 10000];
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

export interface LogoutTarget {
  clientId: string;
  backchannelLogoutUri: string;
  idTokenSignedResponseAlg?: string;
  /** A pairwise client's sector: its logout token's `sub` is the pairwise one, as in its ID tokens. */
  pairwiseSector?: string;
}

export class BackchannelLogout {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly ctx: AppContext,
    private readonly tenant: TenantId,
    private readonly issuer: string,
    private readonly keys: () => KeySet,
    private readonly pairwiseKey: Buffer,
  ) {}

  /** `accountId`: the user's id; the token carries the subject the client knows (pairwise or not). */
  async logoutToken(target: LogoutTarget, accountId: string, sid: string | undefined): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const sub = target.pairwiseSector ? pairwiseSubject(this.pairwiseKey, target.pairwiseSector, accountId) : accountId;
    const payload: Record<string, unknown> = { iss: this.issuer, aud: target.clientId, iat: now, exp: now + 120, jti: randomBytes(16).toString('base64url'), sub, events: { [EVENT]: {} } };
    if (sid) payload.sid = sid;
    const keys = this.keys();
    const alg = target.idTokenSignedResponseAlg && keys.signing.has(target.idTokenSignedResponseAlg as SigningAlg) ? target.idTokenSignedResponseAlg : undefined;
    return signJwt(payload, keys.signingKey(alg), 'logout+jwt');
  }

  /** Starts delivery; resolves once the first attempt is scheduled. */
  async send(target: LogoutTarget, sub: string, sid: string | undefined): Promise<void> {
    const token = await this.logoutToken(target, sub, sid);
    const attempt = async (n: number): Promise<void> => {
      const outcome = await this.deliver(target, token);
      await this.ctx.audit.record(this.tenant, {
        type: 'backchannel_logout',
        status: outcome.ok ? 'success' : n + 1 < RETRY_OFFSETS_MS.length ? 'warning' : 'failed',
        user_id: sub,
        client_id: target.clientId,
        details: { client_id: target.clientId, attempt: n + 1, sid, ...outcome },
      });
      if (!outcome.ok && n + 1 < RETRY_OFFSETS_MS.length) {
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          void attempt(n + 1);
        }, RETRY_OFFSETS_MS[n + 1]! - RETRY_OFFSETS_MS[n]!);
        timer.unref();
        this.timers.add(timer);
      }
    };
    void attempt(0);
  }

  private async deliver(target: LogoutTarget, token: string): Promise<{ ok: boolean; status_code?: number; error?: string }> {
    try {
      // The product's outbound rule (src/outbound): checked address, no redirects, bounded.
      const res = await outboundFetch(target.backchannelLogoutUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }).toString(),
        timeoutMs: 5000,
        maxBytes: 64 * 1024,
        policy: outboundPolicy(this.ctx.config),
      });
      return { ok: res.status === 200 || res.status === 204, status_code: res.status };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
