/**
 * What the surfaces (Management API, platform routes, the OIDC sign-in and account pages, the
 * console) may ask of a live tenant, instead of depending on the TenantActor class: who the
 * tenant is, its effective configuration and keys, token verification, its client cache and usage
 * counters, a security alert to a user an administrator changed, and a reload after a change. The
 * actor implements it; tests can hand a fake.
 */
import type { ClientCache } from '../clients/operations.js';
import type { KeySet } from '../keys/keystore.js';
import type { AccessTokenOwner, TokenCheck } from '../oidc/token-verification.js';
import type { ClientRecord, UserRecord } from '../storage/types.js';
import type { EffectiveConfig } from './config/merge.js';

export interface TenantHandle extends ClientCache {
  readonly tenant: string;
  readonly issuer: string;
  /** The global configuration with this tenant's overrides: the one config a tenant's request reads. */
  readonly config: EffectiveConfig;
  /** The tenant's current signing and verifying keys. */
  readonly keys: KeySet;
  /** A JWT access token of this tenant: signature, issuer, expiry, claims, and its client's state. */
  checkAccessToken(token: string): Promise<TokenCheck>;
  /** True the first time a DPoP proof `jti` is seen for this key thumbprint (issue 18 item 8). */
  claimProofJti(jkt: string, jti: string, expiresAt: number): Promise<boolean>;
  /**
   * The end user behind a Management API token of this tenant, checked for the scopes a route
   * needs (and a first-party client when asked), or why it does not qualify (401 or 403).
   */
  accessTokenOwner(token: string, need: { scopes: readonly string[]; firstParty: boolean }): Promise<AccessTokenOwner>;
  /** A client record through the tenant's cache. */
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
  /** Writes the counted token usage now (it is written every second anyway). */
  flushUsage(): Promise<void>;
  /** Tokens a client was issued that are not written yet. */
  pendingUsage(clientId: string): number;
  /**
   * Tells the user by mail, after the answer, that an administrator changed their credentials (the
   * security alert of the kind, with the tenant's brand, language and account page); never throws.
   */
  alertAdminChange(user: UserRecord, change: 'password_changed' | 'mfa_changed'): void;
  /** Reads keys, configuration and clients from storage again; resolves once the new state is live. */
  reload(): Promise<void>;
}
