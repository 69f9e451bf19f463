/**
 * Sessions ended by the service itself (an administrator's revocation, a user ending one on the
 * account page, a lock, a password change or reset, a deletion) are reported here, so the relying
 * parties holding them are told with a back-channel logout, as when the user signs out through
 * the end-session endpoint (spec 1.4: "on user logout the service sends a logout_token"). The
 * wiring (app.ts) hands the report to the tenant's actor, which holds the keys to sign with. The
 * CLI sets no handler: it never ends sessions.
 */
import type { TenantId } from '../storage/types.js';

/** What a back-channel logout needs of an ended session. */
export interface EndedSession {
  account_id: string | null;
  /** The session's `sid` for each client it authorised (OIDC Back-Channel Logout 1.0, 2.4). */
  sids: Readonly<Record<string, string>>;
}

export type SessionsEndedHandler = (tenant: TenantId, sessions: readonly EndedSession[]) => void;

export class SessionsEnded {
  private handler: SessionsEndedHandler | undefined;

  /** Set once by the wiring; a later call replaces it. */
  handle(handler: SessionsEndedHandler): void {
    this.handler = handler;
  }

  report(tenant: TenantId, sessions: readonly EndedSession[]): void {
    const told = sessions.filter((s) => s.account_id !== null && Object.keys(s.sids).length > 0);
    if (told.length) this.handler?.(tenant, told);
  }
}
