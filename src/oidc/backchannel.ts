/**
 * OIDC Back-Channel Logout 1.0 delivery (CONTRACT.md): a logout_token (iss, aud, iat, exp = iat +
 * 120 s, jti, sub, sid, events) signed like the client's ID tokens, POSTed form-encoded, 3 attempts
 * at 0 s, 2 s and 10 s after the logout, each outcome audited. Runs in the background: sign-out
 * never waits for it.
 */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../context.js';
import type { SigningAlg } from '../config/schema.js';
import { signJwt } from '../keys/jwt.js';
import { outboundFetch, outboundPolicy } from '../outbound/index.js';
import type { KeySet } from '../keys/keystore.js';
import type { TenantId } from '../storage/types.js';
import { pairwiseSubject } from './pairwise.js';

/** When the attempts start, counted from the logout (CONTRACT.md). */
export const RETRY_OFFSETS_MS = [0, 2000, 10000];
/** One attempt's bound; an attempt is also ended when the next one is due (deliverOnSchedule). */
const ATTEMPT_TIMEOUT_MS = 5000;
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** What one attempt came to, as audited: the receiver's status, or why there was none. */
interface DeliveryOutcome {
  ok: boolean;
  status_code?: number;
  error?: string;
}

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

  /** Starts delivery (deliverOnSchedule); resolves once the token is signed and the attempts scheduled. */
  async send(target: LogoutTarget, sub: string, sid: string | undefined): Promise<void> {
    const token = await this.logoutToken(target, sub, sid);
    this.deliverOnSchedule(target, token, (n, outcome) =>
      this.ctx.audit.record(this.tenant, {
        type: 'backchannel_logout',
        status: outcome.ok ? 'success' : n + 1 < RETRY_OFFSETS_MS.length ? 'warning' : 'failed',
        user_id: sub,
        client_id: target.clientId,
        details: { client_id: target.clientId, attempt: n + 1, sid, ...outcome },
      }),
    );
  }

  /**
   * The attempts start at RETRY_OFFSETS_MS counted from the logout, not from the end of the previous
   * attempt (which made them 0, ~7 and ~20 s against a receiver that never answers), each bounded by
   * its own timeout (ATTEMPT_TIMEOUT_MS). An attempt still open when the next one is due is aborted
   * then and reported failed ("no answer before attempt n"): the next starts on time, and the
   * receiver never has two requests of one token open at once. After a success nothing more is sent.
   */
  private deliverOnSchedule(target: LogoutTarget, token: string, report: (n: number, outcome: DeliveryOutcome) => Promise<unknown>): void {
    let delivered = false;
    let open: AbortController | undefined;
    const later: NodeJS.Timeout[] = [];
    const attempt = async (n: number): Promise<void> => {
      if (delivered) return;
      open?.abort(new Error(`no answer before attempt ${n + 1} was due`));
      const mine = new AbortController();
      open = mine;
      const outcome = await this.deliver(target, token, mine.signal);
      if (open === mine) open = undefined;
      if (outcome.ok) {
        delivered = true;
        for (const timer of later) {
          clearTimeout(timer);
          this.timers.delete(timer);
        }
      }
      await report(n, outcome);
    };
    for (let n = 1; n < RETRY_OFFSETS_MS.length; n++) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void attempt(n);
      }, RETRY_OFFSETS_MS[n]);
      timer.unref();
      this.timers.add(timer);
      later.push(timer);
    }
    void attempt(0);
  }

  private async deliver(target: LogoutTarget, token: string, signal: AbortSignal): Promise<DeliveryOutcome> {
    try {
      // The product's outbound rule (src/outbound): checked address, no redirects, bounded.
      const res = await outboundFetch(target.backchannelLogoutUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }).toString(),
        timeoutMs: ATTEMPT_TIMEOUT_MS,
        signal,
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
