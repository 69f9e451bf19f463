/**
 * Storage interfaces: clients and dynamic-registration tokens.
 * Imported through the index, ../types.ts, which also states the rules every repository follows.
 */
import type { AuditEntry } from './audit.js';
import type { Page, PageRequest, TenantId } from './common.js';

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
    /**
     * Writes only while the stored metadata still equals this (as JSON values): a read-modify-write
     * (PATCH) whose base changed meanwhile writes nothing and answers undefined, as for an unknown id.
     */
    unlessChangedFrom?: ClientMetadata,
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
  /** Active tokens: not revoked, not expired, not used up (usable at register-rp). */
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
