/**
 * Passkeys (WebAuthn) of a tenant's users: the rules of both ceremonies, whichever page runs them
 * (account page, sign-in page, second sign-in step, enrolment forced by the MFA policy).
 *
 * - RP ID = the host of the tenant's origin, expected origin = that origin exactly: a passkey made
 *   at tenant A is scoped by the authenticator to A's host and, even if replayed, fails B's RP ID
 *   hash and origin checks, and B's storage (row-level security) does not know its ID anyway.
 * - Every challenge is stored with what it is bound to (purpose, oidc-provider session or
 *   interaction, user) and taken (deleted) by its first use: a response can be checked only once,
 *   only for the ceremony that asked for it, and only within CHALLENGE_SECONDS.
 * - Registration: discoverable credential required, user verification preferred, attestation
 *   `none`, the user's existing passkeys excluded.
 * - Authentication: the stored counter must move forward (recordUse is the atomic check); a
 *   counter that does not is a cloned authenticator (or a replay) and is refused. The backup
 *   eligibility of a credential never changes (WebAuthn 6.1.3); its backup state may, and is kept.
 *
 * Over 300 lines, on purpose: both ceremonies and the challenge binding they share are the rules
 * of one security boundary, kept in one file so a change to one side is read against the other.
 */
import { randomBytes } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { z } from 'zod';
import { lazyModule } from '../lazy-module.js';
import { UniqueViolation } from '../storage/errors.js';
import type { AuditEvent, AuditLog } from '../audit/audit-log.js';
import type { Storage, TenantId, UserRecord, WebauthnCredentialRecord } from '../storage/types.js';

type Deps = { storage: Pick<Storage, 'webauthn' | 'users'> };

/** Time from the options to the response (the authenticator's own timeout is shorter). */
export const CHALLENGE_SECONDS = 300;
const TIMEOUT_MS = 120_000;
export const PASSKEY_NAME_MAX = 64;

export interface RelyingParty {
  /** The tenant's host (no port): what the authenticator scopes the passkey to. */
  id: string;
  /** The tenant's origin: the only one a response may come from. */
  origin: string;
  /** Shown by the authenticator when a passkey is made. */
  name: string;
}

export function relyingPartyOf(origin: URL, name: string): RelyingParty {
  return { id: origin.hostname, origin: origin.origin, name };
}

/** The WebAuthn user handle of a user: the id's bytes (never the e-mail, which may change). */
const userHandleOf = (userId: string) => Buffer.from(userId, 'utf8').toString('base64url');

/** RFC 8176 `amr` of a passkey: synced (backup-eligible) ones are software keys, others hardware. */
export function passkeyAmr(credential: Pick<WebauthnCredentialRecord, 'device_type'>): 'hwk' | 'swk' {
  return credential.device_type === 'multiDevice' ? 'swk' : 'hwk';
}

const base64url = z.string().min(1).max(16384).regex(/^[A-Za-z0-9_-]+={0,2}$/);
const common = {
  id: base64url.max(1024),
  rawId: base64url.max(1024),
  type: z.literal('public-key'),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
};
const registrationSchema = z.object({
  ...common,
  response: z.object({
    clientDataJSON: base64url,
    attestationObject: base64url,
    transports: z.array(z.string().max(32)).max(10).optional(),
  }).passthrough(),
});
const authenticationSchema = z.object({
  ...common,
  response: z.object({
    clientDataJSON: base64url,
    authenticatorData: base64url,
    signature: base64url,
    userHandle: base64url.max(1024).optional(),
  }).passthrough(),
});

/** The challenge the browser says it signed (read before verification, to find the stored one). */
function challengeOf(clientDataJSON: string): string | undefined {
  try {
    const parsed = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown };
    return typeof parsed.challenge === 'string' && parsed.challenge.length <= 256 ? parsed.challenge : undefined;
  } catch {
    return undefined;
  }
}

function parseJson<T>(schema: z.ZodType<T>, raw: string): T | undefined {
  if (raw.length > 64 * 1024) return undefined;
  try {
    const result = schema.safeParse(JSON.parse(raw));
    return result.success ? result.data : undefined;
  } catch {
    return undefined;
  }
}

/** Takes the stored challenge of a response if it is bound to exactly this ceremony. */
async function takeChallenge(deps: Deps, tenant: TenantId, clientDataJSON: string, binding: string): Promise<string | undefined> {
  const challenge = challengeOf(clientDataJSON);
  if (!challenge) return undefined;
  const stored = await deps.storage.webauthn.takeChallenge(tenant, challenge, new Date().toISOString());
  return stored && stored.binding === binding ? challenge : undefined;
}

async function storeChallenge(deps: Deps, tenant: TenantId, challenge: string, binding: string): Promise<void> {
  await deps.storage.webauthn.putChallenge(tenant, { challenge, binding, expires_at: new Date(Date.now() + CHALLENGE_SECONDS * 1000).toISOString() });
}

const newChallenge = () => randomBytes(32).toString('base64url');

/**
 * @simplewebauthn/server is loaded on the first ceremony, not at start (issue 17): with its ASN.1
 * and X.509 dependencies it is ~70 modules, ~30 MB of resident memory and the largest single
 * share of the start-up time, for a feature most instances use rarely or never.
 */
const webauthn = lazyModule(() => import('@simplewebauthn/server'));

/** Options for navigator.credentials.create(), the challenge stored under `binding`. */
export async function registrationOptions(deps: Deps, tenant: TenantId, rp: RelyingParty, user: UserRecord, binding: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const { generateRegistrationOptions } = await webauthn();
  const existing = await deps.storage.webauthn.listCredentials(tenant, user.id);
  const challenge = newChallenge();
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email ?? user.username ?? user.id,
    userDisplayName: user.name ?? user.email ?? user.username ?? '',
    userID: Buffer.from(user.id, 'utf8'),
    challenge: Buffer.from(challenge, 'base64url'),
    timeout: TIMEOUT_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((c) => ({ id: c.id, transports: c.transports })),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'preferred' },
  });
  await storeChallenge(deps, tenant, options.challenge, binding);
  return options;
}

export type RegistrationOutcome = { ok: true; credential: WebauthnCredentialRecord } | { ok: false; reason: 'malformed' | 'expired' | 'invalid' | 'duplicate' };

/**
 * Checks a registration response for `user` and stores the passkey under `name`; `audited` gives
 * the event of the new passkey, stored with it in one transaction.
 */
export async function completeRegistration(
  deps: Deps & { audit: Pick<AuditLog, 'entry'> },
  tenant: TenantId,
  rp: RelyingParty,
  user: UserRecord,
  binding: string,
  raw: string,
  name: string,
  audited?: (credential: WebauthnCredentialRecord) => AuditEvent,
): Promise<RegistrationOutcome> {
  const response = parseJson(registrationSchema, raw) as RegistrationResponseJSON | undefined;
  if (!response) return { ok: false, reason: 'malformed' };
  // Before the challenge is taken, and outside the try below: a failed load is an error, not 'invalid'.
  const { verifyRegistrationResponse } = await webauthn();
  const challenge = await takeChallenge(deps, tenant, response.response.clientDataJSON, binding);
  if (!challenge) return { ok: false, reason: 'expired' };
  let verified;
  try {
    verified = await verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: rp.origin, expectedRPID: rp.id, requireUserVerification: false });
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (!verified.verified) return { ok: false, reason: 'invalid' };
  const info = verified.registrationInfo;
  const now = new Date().toISOString();
  const credential: WebauthnCredentialRecord = {
    id: info.credential.id,
    user_id: user.id,
    public_key: Buffer.from(info.credential.publicKey).toString('base64url'),
    counter: info.credential.counter,
    transports: (info.credential.transports ?? []).slice(0, 10),
    device_type: info.credentialDeviceType,
    backed_up: info.credentialBackedUp,
    aaguid: info.aaguid,
    name: cleanName(name) || defaultName(await deps.storage.webauthn.listCredentials(tenant, user.id)),
    created_at: now,
    last_used_at: null,
  };
  try {
    const entry = audited ? deps.audit.entry(tenant, audited(credential)) : undefined;
    await deps.storage.webauthn.createCredential(tenant, credential, entry);
  } catch (err) {
    if (err instanceof UniqueViolation) return { ok: false, reason: 'duplicate' };
    throw err;
  }
  await syncMfaMethods(deps, tenant, user.id);
  return { ok: true, credential };
}

/** A passkey name as stored: control characters out, spaces folded, at most PASSKEY_NAME_MAX characters. */
export function cleanName(name: string): string {
  return [...name.replace(/[\p{Cc}\p{Cf}]/gu, '').replace(/\s+/g, ' ').trim()].slice(0, PASSKEY_NAME_MAX).join('');
}

function defaultName(existing: WebauthnCredentialRecord[]): string {
  return `Passkey ${existing.length + 1}`;
}

/**
 * Options for navigator.credentials.get(). With `userId` (second factor) the user's passkeys are
 * listed; without (passwordless) none are: the authenticator offers its discoverable ones.
 */
export async function authenticationOptions(
  deps: Deps,
  tenant: TenantId,
  rp: RelyingParty,
  binding: string,
  opts: { userId?: string; userVerification: 'required' | 'preferred' },
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const { generateAuthenticationOptions } = await webauthn();
  const allow = opts.userId ? await deps.storage.webauthn.listCredentials(tenant, opts.userId) : [];
  const challenge = newChallenge();
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    challenge: Buffer.from(challenge, 'base64url'),
    timeout: TIMEOUT_MS,
    userVerification: opts.userVerification,
    allowCredentials: allow.map((c) => ({ id: c.id, transports: c.transports })),
  });
  await storeChallenge(deps, tenant, options.challenge, binding);
  return options;
}

export type AuthenticationFailure = 'malformed' | 'expired' | 'unknown_credential' | 'wrong_user' | 'invalid' | 'user_not_verified' | 'counter_regressed';
export type AuthenticationOutcome =
  | { ok: true; credential: WebauthnCredentialRecord; userVerified: boolean }
  | { ok: false; reason: AuthenticationFailure; credential?: WebauthnCredentialRecord };

/**
 * Checks an assertion. `userId` (second factor): the passkey must be that user's. Passwordless
 * sign-in passes `requireUserVerification`: the passkey alone is then both factors.
 */
export async function completeAuthentication(
  deps: Deps,
  tenant: TenantId,
  rp: RelyingParty,
  binding: string,
  raw: string,
  opts: { userId?: string; requireUserVerification: boolean },
): Promise<AuthenticationOutcome> {
  const response = parseJson(authenticationSchema, raw) as AuthenticationResponseJSON | undefined;
  if (!response) return { ok: false, reason: 'malformed' };
  // Before the challenge is taken, and outside the try below: a failed load is an error, not 'invalid'.
  const { verifyAuthenticationResponse } = await webauthn();
  const challenge = await takeChallenge(deps, tenant, response.response.clientDataJSON, binding);
  if (!challenge) return { ok: false, reason: 'expired' };
  const credential = await deps.storage.webauthn.getCredential(tenant, response.id);
  if (!credential) return { ok: false, reason: 'unknown_credential' };
  if (opts.userId !== undefined && credential.user_id !== opts.userId) return { ok: false, reason: 'wrong_user', credential };
  // A discoverable credential names its user; it must be the one the passkey was made for. Without
  // a user identified beforehand (passwordless) the handle must be there (WebAuthn L2 7.2 step 6).
  const handle = response.response.userHandle;
  if (handle === undefined ? opts.userId === undefined : handle.replace(/=+$/, '') !== userHandleOf(credential.user_id)) {
    return { ok: false, reason: 'wrong_user', credential };
  }
  let info;
  try {
    const verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: credential.id, publicKey: Buffer.from(credential.public_key, 'base64url'), counter: credential.counter, transports: credential.transports },
      requireUserVerification: opts.requireUserVerification,
    });
    if (!verified.verified) return { ok: false, reason: 'invalid', credential };
    info = verified.authenticationInfo;
  } catch (err) {
    const message = err instanceof Error ? err.message : '';
    if (/counter value/i.test(message)) return { ok: false, reason: 'counter_regressed', credential };
    if (/user could not be verified/i.test(message)) return { ok: false, reason: 'user_not_verified', credential };
    return { ok: false, reason: 'invalid', credential };
  }
  if (info.credentialDeviceType !== credential.device_type) return { ok: false, reason: 'invalid', credential };
  const at = new Date().toISOString();
  if (!(await deps.storage.webauthn.recordUse(tenant, credential.id, { counter: info.newCounter, backed_up: info.credentialBackedUp, at }))) {
    return { ok: false, reason: 'counter_regressed', credential };
  }
  return { ok: true, credential: { ...credential, counter: info.newCounter, backed_up: info.credentialBackedUp, last_used_at: at }, userVerified: info.userVerified };
}

/** Removes one of the user's passkeys and updates the user's MFA methods. */
export async function removePasskey(deps: Deps, tenant: TenantId, userId: string, id: string): Promise<boolean> {
  const removed = await deps.storage.webauthn.deleteCredential(tenant, userId, id);
  if (removed) await syncMfaMethods(deps, tenant, userId);
  return removed;
}

/**
 * The user's `mfa_methods` and `mfa_enabled` recomputed from what is enrolled: `totp` while a TOTP
 * secret is set, `webauthn` while any passkey is. The Management API's user object shows these.
 */
export async function syncMfaMethods(deps: Deps, tenant: TenantId, userId: string): Promise<UserRecord | undefined> {
  const user = await deps.storage.users.get(tenant, userId);
  if (!user) return undefined;
  const methods: string[] = [];
  if (user.mfa_secret_sealed) methods.push('totp');
  if ((await deps.storage.webauthn.listCredentials(tenant, userId)).length > 0) methods.push('webauthn');
  const enabled = methods.length > 0;
  if (enabled === user.mfa_enabled && methods.join() === user.mfa_methods.join()) return user;
  return deps.storage.users.update(tenant, userId, { mfa_enabled: enabled, mfa_methods: methods });
}

/** The second factors a user can use under the tenant's settings. */
export function usableMethods(user: Pick<UserRecord, 'mfa_methods' | 'mfa_enabled'>, enabled: { totp_enabled: boolean; webauthn_enabled: boolean }): Array<'totp' | 'webauthn'> {
  if (!user.mfa_enabled) return [];
  const out: Array<'totp' | 'webauthn'> = [];
  if (enabled.totp_enabled && user.mfa_methods.includes('totp')) out.push('totp');
  if (enabled.webauthn_enabled && user.mfa_methods.includes('webauthn')) out.push('webauthn');
  return out;
}
