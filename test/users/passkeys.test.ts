/**
 * The passkey rules of src/users/passkeys.ts on real SQLite storage, below the browser: the options
 * each ceremony hands out (@simplewebauthn/server ships no test vectors in its package, so the real
 * responses come from Chromium's authenticator in test/e2e/passkeys*.test.ts), single-use
 * challenges bound to their ceremony, malformed responses, names, `amr`, usable methods.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserRecord, WebauthnCredentialRecord } from '../../src/storage/types.js';
import {
  CHALLENGE_SECONDS,
  authenticationOptions,
  cleanName,
  completeAuthentication,
  completeRegistration,
  passkeyAmr,
  registrationOptions,
  relyingPartyOf,
  syncMfaMethods,
  usableMethods,
} from '../../src/users/passkeys.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

const TENANT = 'pk-tenant';
const rp = relyingPartyOf(new URL('https://login.acme.example:8443/oidc/v1'), 'Acme');

function user(id: string): UserRecord {
  const now = new Date().toISOString();
  return {
    id, email: `${id}@example.com`, email_verified: true, username: null, given_name: null, family_name: null, name: 'Ada', nickname: null,
    role: 'user', account_enabled: true, locked: false, locked_until: null, auth_provider: 'local', password_hash: 'x',
    mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null, deleted_at: null, created_at: now, updated_at: now, last_login_at: null,
  };
}

function credential(over: Partial<WebauthnCredentialRecord>): WebauthnCredentialRecord {
  return { id: 'cred-1', user_id: 'u1', public_key: 'pk', counter: 0, transports: ['internal'], device_type: 'singleDevice', backed_up: false, aaguid: '', name: 'Laptop', created_at: new Date().toISOString(), last_used_at: null, ...over };
}

const clientData = (challenge: string, type = 'webauthn.get') => Buffer.from(JSON.stringify({ type, challenge, origin: rp.origin })).toString('base64url');

describe('passkey ceremonies (src/users/passkeys.ts)', () => {
  let temp: TempStorage;
  const deps = () => ({ storage: temp.storage });

  beforeAll(async () => {
    temp = openTempStorage();
    await temp.storage.users.create(TENANT, user('u1'));
    await temp.storage.users.create(TENANT, user('u2'));
    await temp.storage.webauthn.createCredential(TENANT, credential({ id: 'cred-1', transports: ['usb', 'nfc'] }));
  });
  afterAll(async () => temp?.close());

  it('takes the RP ID from the tenant host (no port) and the origin exactly', () => {
    expect(rp).toEqual({ id: 'login.acme.example', origin: 'https://login.acme.example:8443', name: 'Acme' });
  });

  it('asks for a discoverable credential, user verification preferred, no attestation, the user\'s passkeys excluded', async () => {
    const options = await registrationOptions(deps(), TENANT, rp, user('u1'), 'register:s1:u1');
    expect(options.rp).toEqual({ id: 'login.acme.example', name: 'Acme' });
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'required', requireResidentKey: true, userVerification: 'preferred' });
    expect(options.attestation).toBe('none');
    expect(options.excludeCredentials).toEqual([{ id: 'cred-1', type: 'public-key', transports: ['usb', 'nfc'] }]);
    expect(Buffer.from(options.user.id, 'base64url').toString()).toBe('u1');
    expect(options.user.name).toBe('u1@example.com');
    expect(Buffer.from(options.challenge, 'base64url')).toHaveLength(32);
    const stored = await temp.storage.webauthn.takeChallenge(TENANT, options.challenge, new Date().toISOString());
    expect(stored?.binding).toBe('register:s1:u1');
    expect(Date.parse(stored!.expires_at) - Date.now()).toBeLessThanOrEqual(CHALLENGE_SECONDS * 1000);
  });

  it('lists the user\'s passkeys for a second factor and none for passwordless sign-in', async () => {
    const second = await authenticationOptions(deps(), TENANT, rp, 'mfa:i1:u1', { userId: 'u1', userVerification: 'preferred' });
    expect(second.allowCredentials).toEqual([{ id: 'cred-1', type: 'public-key', transports: ['usb', 'nfc'] }]);
    expect(second.rpId).toBe('login.acme.example');
    expect(second.userVerification).toBe('preferred');
    const passwordless = await authenticationOptions(deps(), TENANT, rp, 'signin:i1', { userVerification: 'required' });
    expect(passwordless.allowCredentials).toEqual([]);
    expect(passwordless.userVerification).toBe('required');
  });

  it('refuses malformed responses before touching any challenge', async () => {
    for (const raw of ['', 'not json', '[]', '{"id":"x"}', JSON.stringify({ id: 'a', rawId: 'a', type: 'public-key', response: { clientDataJSON: '!!', authenticatorData: 'a', signature: 'a' } }), 'x'.repeat(70_000)]) {
      expect(await completeAuthentication(deps(), TENANT, rp, 'signin:i1', raw, { requireUserVerification: true })).toEqual({ ok: false, reason: 'malformed' });
      expect(await completeRegistration(deps(), TENANT, rp, user('u1'), 'register:s1:u1', raw, '')).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('a challenge finishes only the ceremony it was issued for, and only once', async () => {
    const options = await authenticationOptions(deps(), TENANT, rp, 'signin:i2', { userVerification: 'required' });
    const response = (challenge: string) =>
      JSON.stringify({ id: 'cred-1', rawId: 'cred-1', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: clientData(challenge), authenticatorData: 'AAAA', signature: 'AAAA' } });
    // Another interaction's binding: refused, and the challenge is gone (taken by the attempt).
    expect(await completeAuthentication(deps(), TENANT, rp, 'signin:other', response(options.challenge), { requireUserVerification: true })).toEqual({ ok: false, reason: 'expired' });
    expect(await completeAuthentication(deps(), TENANT, rp, 'signin:i2', response(options.challenge), { requireUserVerification: true })).toEqual({ ok: false, reason: 'expired' });
    // Never issued at all.
    expect(await completeAuthentication(deps(), TENANT, rp, 'signin:i2', response('bm90LWlzc3VlZA'), { requireUserVerification: true })).toEqual({ ok: false, reason: 'expired' });
  });

  it("refuses another user's passkey at a second step before checking the signature", async () => {
    const options = await authenticationOptions(deps(), TENANT, rp, 'mfa:i3:u2', { userId: 'u2', userVerification: 'preferred' });
    const raw = JSON.stringify({ id: 'cred-1', rawId: 'cred-1', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: clientData(options.challenge), authenticatorData: 'AAAA', signature: 'AAAA' } });
    const outcome = await completeAuthentication(deps(), TENANT, rp, 'mfa:i3:u2', raw, { userId: 'u2', requireUserVerification: false });
    expect(outcome).toMatchObject({ ok: false, reason: 'wrong_user' });
  });

  it('refuses a user handle that is not the passkey owner\'s', async () => {
    const options = await authenticationOptions(deps(), TENANT, rp, 'signin:i4', { userVerification: 'required' });
    const raw = JSON.stringify({
      id: 'cred-1', rawId: 'cred-1', type: 'public-key', clientExtensionResults: {},
      response: { clientDataJSON: clientData(options.challenge), authenticatorData: 'AAAA', signature: 'AAAA', userHandle: Buffer.from('u2').toString('base64url') },
    });
    expect(await completeAuthentication(deps(), TENANT, rp, 'signin:i4', raw, { requireUserVerification: true })).toMatchObject({ ok: false, reason: 'wrong_user' });
  });

  it('refuses a passwordless assertion without a user handle (WebAuthn L2 7.2 step 6), before the signature', async () => {
    const options = await authenticationOptions(deps(), TENANT, rp, 'signin:i6', { userVerification: 'required' });
    const raw = JSON.stringify({
      id: 'cred-1', rawId: 'cred-1', type: 'public-key', clientExtensionResults: {},
      response: { clientDataJSON: clientData(options.challenge), authenticatorData: Buffer.alloc(37, 1).toString('base64url'), signature: 'AAAA' },
    });
    expect(await completeAuthentication(deps(), TENANT, rp, 'signin:i6', raw, { requireUserVerification: true })).toMatchObject({ ok: false, reason: 'wrong_user' });
  });

  it('a forged signature is invalid and moves no counter', async () => {
    const options = await authenticationOptions(deps(), TENANT, rp, 'signin:i5', { userVerification: 'required' });
    const raw = JSON.stringify({
      id: 'cred-1', rawId: 'cred-1', type: 'public-key', clientExtensionResults: {},
      response: { clientDataJSON: clientData(options.challenge), authenticatorData: Buffer.alloc(37, 1).toString('base64url'), signature: 'AAAA', userHandle: Buffer.from('u1').toString('base64url') },
    });
    expect(await completeAuthentication(deps(), TENANT, rp, 'signin:i5', raw, { requireUserVerification: true })).toMatchObject({ ok: false, reason: 'invalid' });
    expect((await temp.storage.webauthn.getCredential(TENANT, 'cred-1'))!.last_used_at).toBeNull();
  });

  it('keeps mfa_methods in step with what is enrolled', async () => {
    expect((await syncMfaMethods(deps(), TENANT, 'u1'))!.mfa_methods).toEqual(['webauthn']);
    await temp.storage.users.update(TENANT, 'u1', { mfa_secret_sealed: 'sealed' });
    expect(await syncMfaMethods(deps(), TENANT, 'u1')).toMatchObject({ mfa_enabled: true, mfa_methods: ['totp', 'webauthn'] });
    await temp.storage.webauthn.deleteUserCredentials(TENANT, 'u1');
    await temp.storage.users.update(TENANT, 'u1', { mfa_secret_sealed: null });
    expect(await syncMfaMethods(deps(), TENANT, 'u1')).toMatchObject({ mfa_enabled: false, mfa_methods: [] });
  });

  it('names, amr and usable methods', () => {
    expect(cleanName('  Work\u0000 \u202e laptop\n\t ')).toBe('Work laptop');
    expect([...cleanName('x'.repeat(200))]).toHaveLength(64);
    expect(passkeyAmr({ device_type: 'singleDevice' })).toBe('hwk');
    expect(passkeyAmr({ device_type: 'multiDevice' })).toBe('swk');
    const both = { mfa_enabled: true, mfa_methods: ['totp', 'webauthn'] };
    expect(usableMethods(both, { totp_enabled: true, webauthn_enabled: true })).toEqual(['totp', 'webauthn']);
    expect(usableMethods(both, { totp_enabled: true, webauthn_enabled: false })).toEqual(['totp']);
    expect(usableMethods({ mfa_enabled: false, mfa_methods: [] }, { totp_enabled: true, webauthn_enabled: true })).toEqual([]);
  });
});
