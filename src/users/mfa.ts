/**
 * A user's MFA material at rest and its one-time use. The TOTP secret and the recovery-code hashes
 * are AES-GCM sealed with the tenant and user id as AAD (a blob copied to another row will not
 * open) and never leave the service (spec 2.3).
 *
 * Replay protection reuses the login-attempts log rather than adding columns: its recordFailure is
 * an atomic "prune older than X, append, count since X" on a string key, which is exactly a
 * first-use claim. Two kinds of key:
 *  - `totp-step:<user id>` at the start time of the accepted step: a code is refused when this or a
 *    later step was already accepted (RFC 6238 5.2: a code is good once). Older rows are pruned on
 *    every claim, so a user has at most a couple of rows.
 *  - `mfa-recovery:<user id>:<code hash>` at a fixed time: only the first of two concurrent uses of
 *    the same recovery code wins, even though removing it from the sealed list is read-modify-write.
 * Each change of the material takes the caller's audit event and stores it in the same transaction.
 */
import type { AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import type { TenantId, UserRecord } from '../storage/types.js';
import { syncMfaMethods } from './passkeys.js';
import { TOTP_PERIOD_SECONDS, generateRecoveryCodes, hashRecoveryCode, matchTotp } from './totp.js';

type MfaDeps = Pick<AppContext, 'storage' | 'sealer' | 'audit'>;

export type TotpCheck = 'ok' | 'invalid' | 'replayed';

const secretAad = (tenant: TenantId, userId: string) => `mfa-secret:${tenant}:${userId}`;
const recoveryAad = (tenant: TenantId, userId: string) => `mfa-recovery:${tenant}:${userId}`;
const FIXED_TIME = new Date(0).toISOString();

/** True for the first claim of `key` at or after `atIso`. */
async function claim(deps: MfaDeps, tenant: TenantId, key: string, atIso: string): Promise<boolean> {
  return (await deps.storage.loginAttempts.recordFailure(tenant, key, atIso, atIso)) === 1;
}

/** Checks `code` against `secret` for this user and, if it matches, uses its step up. */
export async function checkTotp(deps: MfaDeps, tenant: TenantId, userId: string, secret: string, code: string, nowMs = Date.now()): Promise<TotpCheck> {
  const step = matchTotp(secret, code, nowMs);
  if (step === undefined) return 'invalid';
  const stepStart = new Date(step * TOTP_PERIOD_SECONDS * 1000).toISOString();
  return (await claim(deps, tenant, `totp-step:${userId}`, stepStart)) ? 'ok' : 'replayed';
}

/** The enrolled user's TOTP check at sign-in. */
export async function verifyUserTotp(deps: MfaDeps, tenant: TenantId, user: UserRecord, code: string): Promise<TotpCheck> {
  if (!user.mfa_secret_sealed) return 'invalid';
  const secret = deps.sealer.unseal(user.mfa_secret_sealed, secretAad(tenant, user.id));
  return checkTotp(deps, tenant, user.id, secret, code);
}

function recoveryHashes(deps: MfaDeps, tenant: TenantId, user: UserRecord): string[] {
  if (!user.mfa_recovery_sealed) return [];
  const parsed: unknown = JSON.parse(deps.sealer.unseal(user.mfa_recovery_sealed, recoveryAad(tenant, user.id)));
  return Array.isArray(parsed) ? parsed.filter((h): h is string => typeof h === 'string') : [];
}

/**
 * Uses up one recovery code; returns how many are left, or undefined if the code is not (or no
 * longer) valid. `audited` gives the event of a use (it names how many codes are left).
 */
export async function useRecoveryCode(deps: MfaDeps, tenant: TenantId, user: UserRecord, code: string, audited?: (left: number) => AuditEvent): Promise<number | undefined> {
  if (!user.mfa_secret_sealed || code.length > 64) return undefined;
  const hashes = recoveryHashes(deps, tenant, user);
  const hash = hashRecoveryCode(code);
  if (!hashes.includes(hash)) return undefined;
  if (!(await claim(deps, tenant, `mfa-recovery:${user.id}:${hash}`, FIXED_TIME))) return undefined;
  const left = hashes.filter((h) => h !== hash);
  const entry = audited ? deps.audit.entry(tenant, audited(left.length)) : undefined;
  await deps.storage.users.update(tenant, user.id, { mfa_recovery_sealed: deps.sealer.seal(JSON.stringify(left), recoveryAad(tenant, user.id)) }, entry);
  return left.length;
}

/** Turns TOTP on with a confirmed secret; returns the new recovery codes (shown once, stored hashed). */
export async function enableTotp(deps: MfaDeps, tenant: TenantId, userId: string, secret: string, audit?: AuditEvent): Promise<string[]> {
  const codes = generateRecoveryCodes();
  const change = {
    mfa_secret_sealed: deps.sealer.seal(secret, secretAad(tenant, userId)),
    mfa_recovery_sealed: deps.sealer.seal(JSON.stringify(codes.map(hashRecoveryCode)), recoveryAad(tenant, userId)),
  };
  await deps.storage.users.update(tenant, userId, change, audit && deps.audit.entry(tenant, audit));
  await syncMfaMethods(deps, tenant, userId); // `totp` beside any passkeys
  return codes;
}

/** TOTP and its recovery codes off; passkeys stay (each is removed on its own). */
export async function disableTotp(deps: MfaDeps, tenant: TenantId, userId: string, audit?: AuditEvent): Promise<void> {
  await deps.storage.users.update(tenant, userId, { mfa_secret_sealed: null, mfa_recovery_sealed: null }, audit && deps.audit.entry(tenant, audit));
  await syncMfaMethods(deps, tenant, userId);
}

/** New recovery codes for an enrolled user (the old ones stop working); shown once, stored hashed. */
export async function regenerateRecoveryCodes(deps: MfaDeps, tenant: TenantId, userId: string, audit?: AuditEvent): Promise<string[]> {
  const codes = generateRecoveryCodes();
  const sealed = deps.sealer.seal(JSON.stringify(codes.map(hashRecoveryCode)), recoveryAad(tenant, userId));
  await deps.storage.users.update(tenant, userId, { mfa_recovery_sealed: sealed }, audit && deps.audit.entry(tenant, audit));
  return codes;
}
