/**
 * Storage interfaces. Every call names its tenant explicitly; implementations (sqlite/, and
 * postgresql/ with row-level security) must never return another tenant's rows.
 * All methods are async so that a networked implementation fits the same shape.
 */

export type TenantId = string;

/** Client metadata as the Management API speaks it (spec 2.2). */
export interface ClientMetadata {
  client_name: string;
  application_type: 'web' | 'native' | 'spa';
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  scope?: string;
  token_endpoint_auth_method: 'none' | 'client_secret_basic' | 'client_secret_post' | 'client_secret_jwt' | 'private_key_jwt';
  client_uri?: string;
  logo_uri?: string;
  policy_uri?: string;
  tos_uri?: string;
  contacts: string[];
  description?: string;
  tags: string[];
  require_pkce: boolean;
  id_token_signed_response_alg?: string;
  subject_type?: 'public' | 'pairwise';
  default_max_age?: number;
  backchannel_logout_uri?: string;
  /** First-party clients skip the consent page. */
  first_party: boolean;
  jwks_uri?: string;
  jwks?: { keys: Record<string, unknown>[] };
}

export interface ClientRecord {
  client_id: string;
  /** sha256 of the secret (base64url); null for public clients. */
  secret_hash: string | null;
  /** AES-GCM sealed secret, only for client_secret_jwt clients (HMAC needs the raw secret). */
  secret_sealed: string | null;
  /** Raised on every secret regeneration; tokens carry it so old ones stop introspecting as active. */
  secret_generation: number;
  metadata: ClientMetadata;
  active: boolean;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
  tokens_issued: number;
}

export interface PageRequest {
  limit: number;
  /** Decoded cursor: the last row of the previous page. */
  after?: { created_at: string; id: string };
  include_count: boolean;
}

export interface Page<T> {
  items: T[];
  has_more: boolean;
  total_count?: number;
}

export interface ClientFilter {
  application_type?: string;
  active?: boolean;
  q?: string;
}

/** Tokens a client was issued since the last write, and when the last one was. */
export interface UsageEntry {
  tenant: TenantId;
  clientId: string;
  tokens: number;
  lastUsedAt: string;
}

/**
 * The writes of clients and users take the audit entry that records them (`audit`): it is written in
 * the same transaction when the write changed a row, so an accepted change is never unaudited and
 * a refused one leaves no entry (the domains, src/clients and src/users, always pass one).
 */
export interface ClientRepository {
  create(tenant: TenantId, record: ClientRecord, audit?: AuditEntry): Promise<void>;
  get(tenant: TenantId, clientId: string): Promise<ClientRecord | undefined>;
  list(tenant: TenantId, filter: ClientFilter, page: PageRequest): Promise<Page<ClientRecord>>;
  count(tenant: TenantId): Promise<number>;
  /** Replaces the given columns; returns the new record or undefined if unknown. */
  update(
    tenant: TenantId,
    clientId: string,
    /** `bump_generation` raises secret_generation atomically (concurrent bumps never collapse into one). */
    change: Partial<Pick<ClientRecord, 'metadata' | 'active' | 'secret_hash' | 'secret_sealed'>> & { bump_generation?: boolean },
    audit?: AuditEntry,
  ): Promise<ClientRecord | undefined>;
  delete(tenant: TenantId, clientId: string, audit?: AuditEntry): Promise<boolean>;
  /** Adds issued-token counts (batched by the caller). */
  /**
   * Adds token counts and moves last_used_at forward (never back: a late batch keeps the newer
   * time), for clients of any tenants, in one transaction (one round trip on PostgreSQL). A client
   * that no longer exists is skipped.
   */
  recordUsageBatch(entries: readonly UsageEntry[]): Promise<void>;
}

/** oidc-provider artefacts (sessions, grants, codes, tokens, interactions...). */
export interface OidcPayloadRow {
  payload: Record<string, unknown>;
  expires_at: number | null;
  consumed: boolean;
}

/** A listed artefact: its id besides the row. */
export interface OidcListedRow {
  id: string;
  payload: Record<string, unknown>;
  expires_at: number | null;
}

/** Which sessions listSessions returns; both given: sessions of that account with that client. */
export interface SessionIndexFilter {
  /** The session's `accountId`. */
  accountId?: string;
  /** A client the session has authorised (a key of its `authorizations`). */
  clientId?: string;
}

/** Which grants listGrantIds returns: of an account, of a client, or both (never every grant). */
export type GrantIndexFilter = { accountId: string; clientId?: string } | { accountId?: string; clientId: string };

export interface OidcPayloadRepository {
  upsert(tenant: TenantId, model: string, id: string, payload: Record<string, unknown>, expiresAt: number | null): Promise<void>;
  find(tenant: TenantId, model: string, id: string): Promise<OidcPayloadRow | undefined>;
  findByUid(tenant: TenantId, model: string, uid: string): Promise<OidcPayloadRow | undefined>;
  findByUserCode(tenant: TenantId, model: string, userCode: string): Promise<OidcPayloadRow | undefined>;
  consume(tenant: TenantId, model: string, id: string): Promise<void>;
  destroy(tenant: TenantId, model: string, id: string): Promise<void>;
  revokeByGrantId(tenant: TenantId, grantId: string): Promise<void>;
  /** Rows of one model for listing (sessions); unexpired only. */
  listByModel(tenant: TenantId, model: string): Promise<OidcListedRow[]>;
  /**
   * Unexpired sessions of an account and/or a client, answered from an index where the backend
   * keeps one (Redis); with neither filter, every session, like listByModel(tenant, 'Session').
   */
  listSessions(tenant: TenantId, filter: SessionIndexFilter): Promise<OidcListedRow[]>;
  /**
   * Ids of the unexpired grants of an account and/or a client, from an index on every backend
   * (migrations 070; Redis sorted sets), so no caller reads every Grant of a tenant.
   */
  listGrantIds(tenant: TenantId, filter: GrantIndexFilter): Promise<string[]>;
  /** Drops expired rows; returns how many. */
  sweepExpired(nowSeconds: number): Promise<number>;
}

export type KeyStatus = 'active' | 'expiring' | 'retired';

export interface SigningKeyRecord {
  kid: string;
  alg: string;
  use: 'sig';
  status: KeyStatus;
  promoted: boolean;
  public_jwk: Record<string, unknown>;
  /** AES-GCM sealed private JWK (JSON). */
  private_sealed: string;
  created_at: string;
  rotated_at: string | null;
  /** When an expiring key leaves the JWKS (end of the overlap window). */
  expires_at: string | null;
  /** Marked by DELETE /api/v1/jwks/:kid: retired at the next rotation or retire-expired. */
  retire_requested: boolean;
}

export interface KeyRepository {
  list(tenant: TenantId): Promise<SigningKeyRecord[]>;
  insert(tenant: TenantId, keys: SigningKeyRecord[]): Promise<void>;
  update(tenant: TenantId, kid: string, change: Partial<Omit<SigningKeyRecord, 'kid' | 'alg' | 'public_jwk' | 'private_sealed'>>): Promise<void>;
  /** Runs fn atomically (rotation replaces several rows at once). */
  transaction<T>(tenant: TenantId, fn: () => Promise<T>): Promise<T>;
}

export type AuditStatus = 'success' | 'failed' | 'info' | 'warning';

export interface AuditEntry {
  id: string;
  type: string;
  status: AuditStatus;
  username: string | null;
  user_id: string | null;
  client_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  tenant_id: string;
  details: Record<string, unknown>;
  timestamp: string;
}

export interface AuditFilter {
  type?: string;
  status?: AuditStatus;
  username?: string;
  user_id?: string;
  client_id?: string;
  /** Exact address as stored (normalised by src/http/ip.ts). */
  ip_address?: string;
  from?: string;
  to?: string;
}

export interface AuditStats {
  totalActivities: number;
  uniqueUsers: number;
  todayCount: number;
  successfulLogins: number;
  failedLogins: number;
}

export interface AuditRepository {
  insert(tenant: TenantId, entry: AuditEntry): Promise<void>;
  get(tenant: TenantId, id: string): Promise<AuditEntry | undefined>;
  list(tenant: TenantId, filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>>;
  types(tenant: TenantId): Promise<string[]>;
  stats(tenant: TenantId, todayStartIso: string): Promise<AuditStats>;
}

export interface Storage {
  readonly kind: 'sqlite' | 'postgresql';
  readonly clients: ClientRepository;
  readonly oidc: OidcPayloadRepository;
  readonly keys: KeyRepository;
  readonly audit: AuditRepository;
  readonly users: UserRepository;
  readonly loginAttempts: LoginAttemptRepository;
  readonly registrationTokens: RegistrationTokenRepository;
  /** Password-reset and e-mail verification tokens (issue 13). */
  readonly accountTokens: AccountTokenRepository;
  readonly userPreferences: UserPreferencesRepository;
  /** The tenant registry (multi-tenant mode): platform data, not scoped by a caller's tenant. */
  readonly tenants: TenantRepository;
  /** Per-tenant configuration overrides (src/tenancy/config). */
  readonly tenantConfig: TenantConfigRepository;
  /** Social login: upstream accounts linked to users (src/social). */
  readonly socialIdentities: SocialIdentityRepository;
  /** Passkeys and their ceremony challenges (issue 14). */
  readonly webauthn: WebauthnRepository;
  /** API resources of each tenant (issue 19). */
  readonly resources: ResourceRepository;
  /** Cheap round trip for readiness and health checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

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

/** Dynamic-registration initial access token (spec 2.7). Only a hash of the raw token is stored. */
export interface RegistrationTokenRecord {
  jti: string;
  token_hash: string;
  expires_at: string;
  max_usage_count: number;
  current_usage_count: number;
  policies: string[];
  note: string | null;
  created_at: string;
  revoked_at: string | null;
  /**
   * The `svc:*` scopes the creator held (issue 12): the only ones a client registered with this
   * token may be allowed. null for tokens made before the rule (no `svc:*` scope for registrants).
   */
  creator_scopes: string[] | null;
}

export interface RegistrationTokenRepository {
  create(tenant: TenantId, record: RegistrationTokenRecord): Promise<void>;
  get(tenant: TenantId, jti: string): Promise<RegistrationTokenRecord | undefined>;
  findByHash(tenant: TenantId, tokenHash: string): Promise<RegistrationTokenRecord | undefined>;
  /** Active (not revoked, not expired) tokens. */
  list(tenant: TenantId, page: PageRequest, nowIso: string): Promise<Page<RegistrationTokenRecord>>;
  revoke(tenant: TenantId, jti: string, atIso: string): Promise<boolean>;
  /**
   * Atomically raises current_usage_count by one if the token is usable (not revoked, not expired,
   * below max). Returns false if it was not usable: two concurrent callers can never exceed the max.
   */
  consumeUse(tenant: TenantId, jti: string, nowIso: string): Promise<boolean>;
  /** Gives a use back (registration failed after consumeUse). */
  releaseUse(tenant: TenantId, jti: string): Promise<void>;
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

/** A tenant of multi-tenant mode (CONTRACT.md tenant object). `default` is never stored. */
export interface TenantRecord {
  id: string;
  slug: string;
  display_name: string;
  domain: string | null;
  status: 'active' | 'suspended';
  created_at: string;
  updated_at: string;
}

export interface TenantFilter {
  status?: TenantRecord['status'];
}

/** The tenant registry: platform data, not owned by any one tenant. */
export interface TenantRepository {
  /** Throws UniqueViolation('slug') when the slug exists. */
  create(record: TenantRecord): Promise<void>;
  get(slug: string): Promise<TenantRecord | undefined>;
  list(filter: TenantFilter, page: PageRequest): Promise<Page<TenantRecord>>;
  update(slug: string, change: Partial<Pick<TenantRecord, 'display_name' | 'domain' | 'status'>>): Promise<TenantRecord | undefined>;
  /** Removes the record and purges every row of the tenant's data; false (nothing done) when unknown. */
  delete(slug: string): Promise<boolean>;
}

/** Per-tenant configuration overrides, one JSON object per section (spec 1.5). Sensitive fields arrive sealed. */
export interface TenantConfigRepository {
  /** Every stored section of the tenant ({} when none). */
  get(tenant: TenantId): Promise<Record<string, Record<string, unknown>>>;
  put(tenant: TenantId, section: string, data: Record<string, unknown>): Promise<void>;
}

/** An upstream account (provider + its subject) that signs in a user (src/social). */
export interface SocialIdentityRecord {
  provider: string;
  subject: string;
  user_id: string;
  email: string | null;
  linked_at: string;
  last_used_at: string | null;
}

export interface SocialIdentityRepository {
  /** Throws UniqueViolation('identity') when the upstream account is linked already (to anyone). */
  link(tenant: TenantId, identity: SocialIdentityRecord): Promise<void>;
  find(tenant: TenantId, provider: string, subject: string): Promise<SocialIdentityRecord | undefined>;
  /** A user's linked accounts, oldest first. */
  listByUser(tenant: TenantId, userId: string): Promise<SocialIdentityRecord[]>;
  touch(tenant: TenantId, provider: string, subject: string, atIso: string): Promise<void>;
  /** Removes one link of that user; false when the user has no such link. */
  unlink(tenant: TenantId, userId: string, provider: string, subject: string): Promise<boolean>;
  /** Every link of a user (the user was deleted). */
  unlinkAll(tenant: TenantId, userId: string): Promise<void>;
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
  createCredential(tenant: TenantId, record: WebauthnCredentialRecord): Promise<void>;
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

/** A scope an API resource defines (issue 19). */
export interface ResourceScope {
  name: string;
  description: string;
}

/** A tenant's own API (CONTRACT.md "API resources"): a token audience besides urn:svc:api:v1. */
export interface ResourceRecord {
  id: string;
  /** Absolute URI, unique within the tenant; the `aud` of its access tokens. */
  identifier: string;
  name: string;
  scopes: ResourceScope[];
  token_format: 'jwt' | 'opaque';
  /** Seconds; never above the tenant ceiling (86400). */
  access_token_ttl: number;
  signing_alg: string;
  /** Puts the user's `roles` claim in this resource's access tokens even without the `roles` scope. */
  include_roles: boolean;
  created_at: string;
  updated_at: string;
}

export type ResourceChange = Partial<Pick<ResourceRecord, 'name' | 'scopes' | 'token_format' | 'access_token_ttl' | 'signing_alg' | 'include_roles'>> & { updated_at: string };

export interface ResourceRepository {
  /** Throws UniqueViolation('identifier') when the tenant already has a resource with that identifier. */
  create(tenant: TenantId, record: ResourceRecord): Promise<void>;
  get(tenant: TenantId, id: string): Promise<ResourceRecord | undefined>;
  list(tenant: TenantId, page: PageRequest): Promise<Page<ResourceRecord>>;
  /** Every resource of the tenant, oldest first (the token endpoint's index; bounded by the API). */
  all(tenant: TenantId): Promise<ResourceRecord[]>;
  count(tenant: TenantId): Promise<number>;
  update(tenant: TenantId, id: string, change: ResourceChange): Promise<ResourceRecord | undefined>;
  delete(tenant: TenantId, id: string): Promise<boolean>;
}
