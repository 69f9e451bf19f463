/**
 * What the sign-in interaction (interactions.ts) needs for passkeys and the MFA policy, kept out of
 * that file: the tenant's settings on the sign-in host, the challenge bindings of each ceremony,
 * the JSON answer of an options request, the sealed TOTP secret of enrolment at sign-in, and the
 * audit of a refused passkey.
 *
 * Bindings name the ceremony, the tenant, the interaction and (when known) the user, so a challenge
 * issued for passwordless sign-in cannot finish a second step, another interaction, or another
 * user's step (users/passkeys.ts takes it once).
 */
import type { AppContext } from '../context.js';
import type { HttpResponse } from '../http/types.js';
import type { TenantId } from '../storage/types.js';
import type { MessageKey } from '../ui/i18n/index.js';
import type { AuthenticationFailure, RelyingParty } from '../users/passkeys.js';

/** The tenant's MFA settings (security.mfa, after tenant overrides and floors). */
export interface MfaSettings {
  required: boolean;
  totp_enabled: boolean;
  webauthn_enabled: boolean;
}

/** The part of the sign-in host the passkey steps read. */
export interface PasskeyHostSettings {
  readonly mfa: MfaSettings;
  readonly relyingParty: RelyingParty;
  /** Path of the passkey script (ui/passkey-script.ts). */
  readonly script: string;
}

export const signInBinding = (tenant: TenantId, uid: string) => `signin:${tenant}:${uid}`;
export const secondStepBinding = (tenant: TenantId, uid: string, userId: string) => `mfa:${tenant}:${uid}:${userId}`;
export const enrolmentBinding = (tenant: TenantId, uid: string, userId: string) => `enrol:${tenant}:${uid}:${userId}`;

/** Ceremony options for the passkey script: JSON, never cached. */
export function optionsResponse(options: unknown): HttpResponse {
  return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }, body: JSON.stringify(options) };
}

/** Whether the MFA policy leaves this user, who has no usable second factor, to enrol one now. */
export function mustEnrol(mfa: MfaSettings): boolean {
  return mfa.required && (mfa.totp_enabled || mfa.webauthn_enabled);
}

/**
 * Whether a sign-in session may stand for a sign-in under the MFA policy: while `required` holds,
 * only one that proved two factors (RFC 8176 `mfa` in its `amr`). A session signed in with the
 * password alone before the policy was turned on (or before the user had a second factor) would
 * otherwise go on yielding codes, silently and with a sliding expiry, for as long as it is used.
 */
export function sessionMeetsMfaPolicy(mfa: Pick<MfaSettings, 'required'>, amr: unknown): boolean {
  return !mfa.required || (Array.isArray(amr) && amr.includes('mfa'));
}

const enrolmentAad = (tenant: TenantId, uid: string, userId: string) => `mfa-enroll-signin:${tenant}:${uid}:${userId}`;
const ENROLMENT_SECONDS = 600;

/** The TOTP secret of enrolment at sign-in, sealed into the form (bound to tenant, interaction and user). */
export function sealEnrolmentSecret(ctx: Pick<AppContext, 'sealer'>, tenant: TenantId, uid: string, userId: string, secret: string): string {
  return ctx.sealer.seal(JSON.stringify({ secret, exp: Date.now() + ENROLMENT_SECONDS * 1000 }), enrolmentAad(tenant, uid, userId));
}

export function openEnrolmentSecret(ctx: Pick<AppContext, 'sealer'>, tenant: TenantId, uid: string, userId: string, sealed: string): string | undefined {
  try {
    const parsed = JSON.parse(ctx.sealer.unseal(sealed, enrolmentAad(tenant, uid, userId))) as { secret?: unknown; exp?: unknown };
    return typeof parsed.secret === 'string' && typeof parsed.exp === 'number' && parsed.exp > Date.now() ? parsed.secret : undefined;
  } catch {
    return undefined;
  }
}

/** What the user reads when a passkey is refused (never which check failed, beyond "expired"). */
export function passkeyFailureKey(reason: AuthenticationFailure): MessageKey {
  if (reason === 'expired') return 'passkey.refused.expired';
  if (reason === 'user_not_verified') return 'passkey.refused.not_verified';
  return 'passkey.refused.other';
}

/**
 * Audits a refused passkey. A counter that went backwards means a cloned authenticator (or a
 * replayed assertion): that gets a warning entry of its own besides the failure.
 */
export async function auditPasskeyRefusal(
  ctx: Pick<AppContext, 'audit'>,
  tenant: TenantId,
  who: { ip_address: string | null; user_agent: string | null; client_id: string | null },
  step: 'passwordless' | 'second_factor' | 'enrolment',
  reason: string,
  credential?: { id: string; user_id: string },
  username: string | null = null,
): Promise<void> {
  const type = step === 'second_factor' ? 'mfa_failed' : 'failed_login';
  const userId = credential?.user_id ?? null;
  await ctx.audit.record(tenant, { type, status: 'failed', username, user_id: userId, ...who, details: { method: step === 'second_factor' ? 'webauthn' : 'passkey', step, reason, ...(credential ? { credential_id: credential.id } : {}) } });
  if (reason === 'counter_regressed' && credential) {
    await ctx.audit.record(tenant, {
      type: 'passkey_clone_suspected',
      status: 'warning',
      username,
      user_id: userId,
      ...who,
      details: { user_id: userId, credential_id: credential.id, reason: 'signature counter did not increase' },
    });
  }
}
