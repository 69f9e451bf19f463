/**
 * Failed client authentications in the audit log (spec 1.6: "failed authentication attempts"; as
 * Keycloak's CLIENT_LOGIN_ERROR or Auth0's `feccft`), without handing anyone a way to make the
 * service write without bound. Called by the throttle (auth-throttle.ts) for each failure it counted:
 *
 * - a failure against a client of the tenant is one `client_auth_failed` entry, within the
 *   throttle's own limits: at most its per-address limit per client and address, and its
 *   per-client limit per client, per window. Failures past them (a burst that passed the check
 *   together) are counted but not audited, and a failure that was not counted at all (the
 *   counters unavailable: the throttle fails open) is not audited either;
 * - the failure that brings a client and address, or a client, to its limit adds one
 *   `client_auth_throttled` entry: the requests refused with 429 after it write nothing;
 * - a failure naming no client of the tenant (any string a caller likes, so without bound) writes
 *   no entry: it is logged at warn, the first of a tenant's minute at once and the rest of that
 *   minute as one line with their count (unknownClientLog).
 *
 * Entries are written after the answer (http/after-answer.ts), and never hold what was presented
 * (secret, assertion): only the client, the address, the endpoint and why.
 */
import type { AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import { afterAnswer } from '../http/after-answer.js';
import type { ClientAuthFailureReason } from './client-auth-failures.js';

export interface CountedFailure {
  tenant: string;
  clientId: string;
  ip: string;
  userAgent: string | undefined;
  /** oidc-provider's name of the endpoint (`token`, `introspection`...). */
  endpoint: string;
  reason: ClientAuthFailureReason;
  detail: string;
  /** Whether the client exists in the tenant. */
  exists: boolean;
  /** The counts with this failure in them (0: not counted). */
  perSource: number;
  perClient: number;
}

export interface ThrottleLimits {
  perSource: number;
  perClient: number;
  windowSeconds: number;
}

const MAX_DETAIL = 200;

export function auditClientAuthFailure(ctx: AppContext, f: CountedFailure, limits: ThrottleLimits): void {
  if (!f.exists) {
    unknownClientLog(ctx).note(f);
    return;
  }
  if (f.perSource < 1 || f.perSource > limits.perSource || f.perClient > limits.perClient) return;
  const who = { client_id: f.clientId, ip_address: f.ip, user_agent: f.userAgent ?? null };
  const events: AuditEvent[] = [
    {
      type: 'client_auth_failed',
      status: 'failed',
      ...who,
      details: { client_id: f.clientId, endpoint: f.endpoint, reason: f.reason, detail: f.detail.slice(0, MAX_DETAIL) },
    },
  ];
  const throttled = (scope: 'client_and_address' | 'client', failures: number): AuditEvent => ({
    type: 'client_auth_throttled',
    status: 'warning',
    ...who,
    details: { client_id: f.clientId, endpoint: f.endpoint, scope, failures, window_seconds: limits.windowSeconds, retry_after: limits.windowSeconds },
  });
  if (f.perSource === limits.perSource) events.push(throttled('client_and_address', f.perSource));
  if (f.perClient === limits.perClient) events.push(throttled('client', f.perClient));
  afterAnswer(
    async () => {
      await Promise.all(events.map((e) => ctx.audit.record(f.tenant, e)));
    },
    (err) => ctx.log.error({ err, tenant: f.tenant }, 'failed client authentication not audited'),
  );
}

/** The failures naming no client of a tenant, logged at most twice a minute per tenant and process. */
class UnknownClientLog {
  private readonly windows = new Map<string, { count: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly ctx: AppContext,
    private readonly windowMs: number,
  ) {}

  note(f: CountedFailure): void {
    const open = this.windows.get(f.tenant);
    if (open) {
      open.count++;
      return;
    }
    // The first one of the window says who and from where; the rest of the window is a count.
    this.ctx.log.warn({ tenant: f.tenant, client_id: f.clientId, ip: f.ip, endpoint: f.endpoint, reason: f.reason }, 'client authentication failed: no such client');
    const timer = setTimeout(() => this.close(f.tenant), this.windowMs);
    timer.unref();
    this.windows.set(f.tenant, { count: 0, timer });
  }

  private close(tenant: string): void {
    const window = this.windows.get(tenant);
    this.windows.delete(tenant);
    if (window?.count) {
      this.ctx.log.warn({ tenant, failures: window.count, window_seconds: this.windowMs / 1000 }, 'client authentication failed: more attempts naming no such client');
    }
  }
}

const unknownLogs = new WeakMap<AppContext, UnknownClientLog>();
const UNKNOWN_LOG_WINDOW_MS = 60_000;

function unknownClientLog(ctx: AppContext): UnknownClientLog {
  let log = unknownLogs.get(ctx);
  if (!log) unknownLogs.set(ctx, (log = new UnknownClientLog(ctx, UNKNOWN_LOG_WINDOW_MS)));
  return log;
}
