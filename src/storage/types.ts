/**
 * Storage interfaces. Every call names its tenant explicitly; implementations (sqlite/, and
 * postgresql/ with row-level security) must never return another tenant's rows.
 * All methods are async so that a networked implementation fits the same shape.
 *
 * The interfaces of each domain live in types/<domain>.ts; this file is their index (import from
 * here), the Storage aggregate, and the OIDC artefact and social-identity repositories.
 */
import type { AccountTokenRepository, LoginAttemptRepository, UserPreferencesRepository, UserRepository, WebauthnRepository } from './types/users.js';
import type { AuditRepository } from './types/audit.js';
import type { ClientRepository, RegistrationTokenRepository } from './types/clients.js';
import type { KeyRepository } from './types/keys.js';
import type { ResourceRepository } from './types/resources.js';
import type { TenantConfigRepository, TenantRepository } from './types/tenants.js';
import type { TenantId } from './types/common.js';

export type * from './types/common.js';
export type * from './types/audit.js';
export type * from './types/clients.js';
export type * from './types/users.js';
export type * from './types/keys.js';
export type * from './types/tenants.js';
export type * from './types/resources.js';

export interface OidcPayloadRow {
  payload: Record<string, unknown>;
  expires_at: number | null;
  consumed: boolean;
}

/**
 * A row found with the Grant it names (OidcPayloadRepository.findWithGrant). `grant` is what was
 * read under `grant.id` (the row's `grantId` as stored): undefined when the row names no grant;
 * `grant.row` undefined when no live Grant is under that id.
 */
export interface OidcRowWithGrant {
  row: OidcPayloadRow;
  grant?: { id: string; row: OidcPayloadRow | undefined };
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

/**
 * The models the service lists or counts (the sessions API, grant statistics). Only these need an
 * index of every row by model: Redis keeps one for them alone (storage/redis/oidc-scripts.ts), so
 * an access or refresh token is not also written into a tenant-wide sorted set that nothing reads.
 */
export const LISTED_MODELS = ['Session', 'Grant'] as const;
export type ListedModel = (typeof LISTED_MODELS)[number];

/** One artefact to write: upsert's arguments. */
export interface OidcUpsert {
  model: string;
  id: string;
  payload: Record<string, unknown>;
  expiresAt: number | null;
}

export interface OidcPayloadRepository {
  upsert(tenant: TenantId, model: string, id: string, payload: Record<string, unknown>, expiresAt: number | null): Promise<void>;
  find(tenant: TenantId, model: string, id: string): Promise<OidcPayloadRow | undefined>;
  findByUid(tenant: TenantId, model: string, uid: string): Promise<OidcPayloadRow | undefined>;
  findByUserCode(tenant: TenantId, model: string, userCode: string): Promise<OidcPayloadRow | undefined>;
  /**
   * find, and the Grant the row's `grantId` names, read together (issue 17): on PostgreSQL one
   * statement, so a token path's grant costs no statement of its own. Optional: a store without it
   * (SQLite, Redis) is read with find, then the grant. Undefined when the row is not found.
   */
  findWithGrant?(tenant: TenantId, model: string, id: string): Promise<OidcRowWithGrant | undefined>;
  /**
   * consume(used), and only when this call consumed it, upsert of every row, as one atomic step
   * (issue 17): on Redis one script, where the refresh grant and the code exchange paid three
   * commands' worth of client work for it; on PostgreSQL one statement; on SQLite one write of the
   * group commit. True when consumed; false writes nothing. Atomic in every store: a failure
   * between a consume and its rows (a restart, a full disk) would leave the token spent with no
   * successor, and the client's retry would be taken for a replay that revokes the grant. Optional:
   * a store without it gets the consume and the upserts side by side (oidc/issue-together.ts).
   */
  consumeAndUpsert?(tenant: TenantId, used: { model: string; id: string }, rows: OidcUpsert[]): Promise<boolean>;
  /**
   * upsert of every row, in one step (issue 17): on Redis one script, where a silent authorization's
   * code and session re-save were two commands' worth of client work. Optional: a store without it
   * gets the upserts side by side (oidc/issue-together.ts).
   */
  upsertMany?(tenant: TenantId, rows: OidcUpsert[]): Promise<void>;
  /**
   * Marks the row consumed. True when this call consumed it; false when it was consumed already or
   * is not there. Atomic: of two consumes of one row at the same moment exactly one gets true, so a
   * code or refresh token presented twice at once is spent once (the other caller refuses and
   * revokes the grant, as for any replay).
   */
  consume(tenant: TenantId, model: string, id: string): Promise<boolean>;
  /**
   * Removes the row. True when this call removed it; false when it was not there (already destroyed,
   * or expired on Redis). Atomic like consume: of two destroys of one row exactly one gets true, so a
   * revocation raced by another is answered and audited once.
   */
  destroy(tenant: TenantId, model: string, id: string): Promise<boolean>;
  revokeByGrantId(tenant: TenantId, grantId: string): Promise<void>;
  /** Rows of one listed model (sessions, grants); unexpired only. */
  listByModel(tenant: TenantId, model: ListedModel): Promise<OidcListedRow[]>;
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
  /** How many unexpired rows of a listed model the tenant has, without reading them. */
  countLive(tenant: TenantId, model: ListedModel): Promise<number>;
  /** Drops expired rows; returns how many. */
  sweepExpired(nowSeconds: number): Promise<number>;
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
  /**
   * Runs `reads`, a synchronous function that starts storage reads (and may return their
   * promises), so that a backend able to do so answers them from one snapshot at the cost of one:
   * SQLite takes its WAL read lock once for all of them instead of once per statement. `reads` must
   * not write. PostgreSQL runs it as it is.
   */
  readTogether<T>(reads: () => T): T;
  /** Cheap round trip for readiness and health checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** The token paths' users in memory, for the metrics (PostgreSQL's user-cache.ts); absent without one. */
  userCacheStats?(): UserCacheStats;
}

/** What a backend's user memory reports (metrics.ts): counters since start. */
export interface UserCacheStats {
  /** Whether users are served from memory now (the change notices are known to arrive). */
  serving: boolean;
  entries: number;
  hits: number;
  misses: number;
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
