/**
 * Storage interfaces: end users, their sign-in attempts, account tokens, preferences and passkeys.
 * Imported through the index, ../types.ts, which also states the rules every repository follows.
 */
import type { AuditEntry } from './audit.js';
import type { Page, PageRequest, TenantId } from './common.js';

/** End user (spec 2.3, CONTRACT.md user object). `password_hash` never leaves the service. */
export interface UserRecord {
  id: string;
  email: string | null;
  email_verified: boolean;
  username: string | null;
  given_name: string | null;
  family_name: string | null;
  name: string | null;
  nickname: string | null;
  role: string;
  account_enabled: boolean;
  locked: boolean;
  /** Set when the brute-force guard locked the account; null for admin locks (no expiry). */
  locked_until: string | null;
  auth_provider: string;
  password_hash: string | null;
  mfa_enabled: boolean;
  mfa_methods: string[];
  /** Sealed TOTP secret / recovery codes, if any: never returned. */
  mfa_secret_sealed: string | null;
  mfa_recovery_sealed: string | null;
  /** Set when the account was anonymised by DELETE: sign-in impossible. */
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
  last_login_at: string | null;
}

/**
 * A user as the token paths need it (userinfo, the refresh and code grants, silent
 * re-authentication, Management API tokens): everything but the password hash and the sealed MFA
 * secrets, so a backend may keep it in memory (PostgreSQL: postgresql/user-cache.ts).
 */
export type UserWithoutSecrets = Omit<UserRecord, 'password_hash' | 'mfa_secret_sealed' | 'mfa_recovery_sealed'>;

export interface UserFilter {
  account_enabled?: boolean;
  role?: string;
  auth_provider?: string;
  /** Searches e-mail, username, name. */
  q?: string;
}

export interface UserRepository {
  create(tenant: TenantId, user: UserRecord, audit?: AuditEntry): Promise<void>;
  get(tenant: TenantId, id: string): Promise<UserRecord | undefined>;
  /**
   * The user for a token path. A backend may answer from memory it keeps current (PostgreSQL does,
   * evicted by the database's change notices: postgresql/user-cache.ts); without it, `get` is used.
   */
  getForToken?(tenant: TenantId, id: string): Promise<UserWithoutSecrets | undefined>;
  /** Case-insensitive e-mail lookup (sign-in); anonymised users are never found. */
  findByEmail(tenant: TenantId, email: string): Promise<UserRecord | undefined>;
  list(tenant: TenantId, filter: UserFilter, page: PageRequest): Promise<Page<UserRecord>>;
  count(tenant: TenantId): Promise<number>;
  /** `audit`: the entry (or entries: a sign-in writes two) stored in the update's transaction. */
  update(tenant: TenantId, id: string, change: Partial<Omit<UserRecord, 'id' | 'created_at'>>, audit?: AuditEntry | readonly AuditEntry[]): Promise<UserRecord | undefined>;
}

/** Failed sign-in attempts, for the brute-force guard (CONTRACT.md). */
export interface LoginAttemptRepository {
  /** Records a failure and returns how many failures the key has since `sinceIso`. */
  recordFailure(tenant: TenantId, key: string, atIso: string, sinceIso: string): Promise<number>;
  clear(tenant: TenantId, key: string): Promise<void>;
}

/** A single-use token mailed to an end user (issue 13): only its sha256 is stored. */
export type AccountTokenKind = 'password_reset' | 'verify_email';

export interface AccountTokenRecord {
  token_hash: string;
  kind: AccountTokenKind;
  user_id: string;
  /** The address the token was mailed to (for verification: the address it confirms). */
  email: string;
  data: Record<string, unknown> | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface AccountTokenRepository {
  create(tenant: TenantId, record: AccountTokenRecord): Promise<void>;
  /** The token if it is of this kind, unused and unexpired (no state change). */
  findUsable(tenant: TenantId, kind: AccountTokenKind, tokenHash: string, nowIso: string): Promise<AccountTokenRecord | undefined>;
  /** Marks it used if it is usable, atomically: of two concurrent callers only one gets it. */
  consume(tenant: TenantId, kind: AccountTokenKind, tokenHash: string, nowIso: string): Promise<AccountTokenRecord | undefined>;
  /** How many tokens of this kind were created for the address since then (per-address limits). */
  countSince(tenant: TenantId, kind: AccountTokenKind, email: string, sinceIso: string): Promise<number>;
  /** Marks every unused token of the user of this kind used (a newer one, or a password set, ends them). */
  expireForUser(tenant: TenantId, kind: AccountTokenKind, userId: string, nowIso: string): Promise<void>;
  /** Cross-tenant: deletes every token expired before then (storage/sweeper.ts); the count removed. */
  sweepExpired(beforeIso: string): Promise<number>;
}

/** An end user's own preferences (the account page's security-alert choices), as one JSON object. */
export interface UserPreferencesRepository {
  get(tenant: TenantId, userId: string): Promise<Record<string, unknown> | undefined>;
  put(tenant: TenantId, userId: string, data: Record<string, unknown>, atIso: string): Promise<void>;
}

/** A user's passkey (WebAuthn credential). The public key is not secret; nothing here is. */
export interface WebauthnCredentialRecord {
  /** Credential ID, base64url. */
  id: string;
  user_id: string;
  /** COSE public key, base64url. */
  public_key: string;
  /** Signature counter last seen (0 for authenticators that do not count). */
  counter: number;
  transports: string[];
  /** Backup eligibility: a synced passkey is `multiDevice`. */
  device_type: 'singleDevice' | 'multiDevice';
  backed_up: boolean;
  aaguid: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

/** A pending ceremony: its challenge and what it is bound to (purpose, session or interaction, user). */
export interface WebauthnChallengeRecord {
  challenge: string;
  binding: string;
  expires_at: string;
}

export interface WebauthnRepository {
  /** Throws UniqueViolation('id') when the credential ID is already registered in the tenant. */
  /** Stores a passkey; `audit`, when given, is written in the same transaction. */
  createCredential(tenant: TenantId, record: WebauthnCredentialRecord, audit?: AuditEntry): Promise<void>;
  getCredential(tenant: TenantId, id: string): Promise<WebauthnCredentialRecord | undefined>;
  /** A user's passkeys, oldest first. */
  listCredentials(tenant: TenantId, userId: string): Promise<WebauthnCredentialRecord[]>;
  /** Renames one of the user's passkeys; false when the user holds no such passkey. */
  renameCredential(tenant: TenantId, userId: string, id: string, name: string): Promise<boolean>;
  /** Removes one of the user's passkeys; false when the user holds no such passkey. */
  deleteCredential(tenant: TenantId, userId: string, id: string): Promise<boolean>;
  /** Removes every passkey of the user; returns how many. */
  deleteUserCredentials(tenant: TenantId, userId: string): Promise<number>;
  /**
   * Records a successful use: the new counter, backup state and time, atomically only if the
   * counter moved forward (or both are 0, an authenticator without a counter). False otherwise: a
   * cloned authenticator, or a concurrent use of the same assertion.
   */
  recordUse(tenant: TenantId, id: string, use: { counter: number; backed_up: boolean; at: string }): Promise<boolean>;
  /** Stores a challenge (and drops the tenant's expired ones). */
  putChallenge(tenant: TenantId, record: WebauthnChallengeRecord): Promise<void>;
  /** Removes and returns the challenge if it exists and has not expired at `nowIso`: single use. */
  takeChallenge(tenant: TenantId, challenge: string, nowIso: string): Promise<WebauthnChallengeRecord | undefined>;
}
