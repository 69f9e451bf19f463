-- The PostgreSQL schema: the tables of migrations/sqlite/001-004 with native types, and row-level
-- security on every one of them (docs/postgresql.md).
--
-- Conventions:
--   * tenant_id on every table and first in every primary key and index.
--   * Identifiers, names and search columns are COLLATE "C": byte order and ASCII-only case folding
--     in lower()/ILIKE, exactly as SQLite, whatever the database's locale. Sort orders and cursors
--     therefore match the SQLite backend.
--   * Timestamps are timestamptz; the service reads them back as ISO 8601 UTC strings. OIDC
--     artefact expiries stay epoch seconds (bigint), the unit oidc-provider speaks.
--   * JSON documents are jsonb.
-- `svc migrate` runs this file in one transaction as the schema owner.

-- ---------------------------------------------------------------------------------------------
-- The service role. Roles belong to the cluster, so another database may already have created it,
-- possibly at this very moment: the duplicate is caught. NOLOGIN: it holds privileges; the service
-- logs in as any member of it (or a superuser) and switches to it (docs/postgresql.md).
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'svc_app') THEN
    BEGIN
      CREATE ROLE svc_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL;
    END;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'svc_app' AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'role svc_app exists with SUPERUSER or BYPASSRLS: row-level security would not apply to the service';
  END IF;
END
$$;

-- ---------------------------------------------------------------------------------------------
CREATE TABLE clients (
  tenant_id         text COLLATE "C" NOT NULL,
  client_id         text COLLATE "C" NOT NULL,
  secret_hash       text,
  secret_sealed     text,
  secret_generation integer     NOT NULL DEFAULT 0,
  metadata          jsonb       NOT NULL,          -- spec 2.2 fields
  client_name       text COLLATE "C" NOT NULL,     -- copies for filtering and search
  application_type  text COLLATE "C" NOT NULL,
  description       text COLLATE "C",
  active            boolean     NOT NULL DEFAULT true,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  last_used_at      timestamptz,
  tokens_issued     bigint      NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, client_id)
);
CREATE INDEX clients_page ON clients (tenant_id, created_at, client_id);

CREATE TABLE oidc_payloads (
  tenant_id   text COLLATE "C" NOT NULL,
  model       text COLLATE "C" NOT NULL,
  id          text COLLATE "C" NOT NULL,
  payload     jsonb  NOT NULL,
  grant_id    text COLLATE "C",
  user_code   text COLLATE "C",
  uid         text COLLATE "C",
  expires_at  bigint,                              -- epoch seconds
  consumed_at bigint,
  PRIMARY KEY (tenant_id, model, id)
);
CREATE INDEX oidc_payloads_grant ON oidc_payloads (tenant_id, grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oidc_payloads_user_code ON oidc_payloads (tenant_id, model, user_code) WHERE user_code IS NOT NULL;
CREATE INDEX oidc_payloads_uid ON oidc_payloads (tenant_id, model, uid) WHERE uid IS NOT NULL;
CREATE INDEX oidc_payloads_expiry ON oidc_payloads (expires_at) WHERE expires_at IS NOT NULL;
-- Management API session lists filtered by account (listSessions).
CREATE INDEX oidc_payloads_session_account ON oidc_payloads (tenant_id, (payload ->> 'accountId')) WHERE model = 'Session';

CREATE TABLE signing_keys (
  tenant_id        text COLLATE "C" NOT NULL,
  kid              text COLLATE "C" NOT NULL,
  alg              text        NOT NULL,
  use              text        NOT NULL DEFAULT 'sig',
  status           text        NOT NULL CHECK (status IN ('active', 'expiring', 'retired')),
  promoted         boolean     NOT NULL DEFAULT false,
  public_jwk       jsonb       NOT NULL,
  private_sealed   text        NOT NULL,
  created_at       timestamptz NOT NULL,
  rotated_at       timestamptz,
  expires_at       timestamptz,
  retire_requested boolean     NOT NULL DEFAULT false,
  PRIMARY KEY (tenant_id, kid)
);

CREATE TABLE audit_entries (
  tenant_id   text COLLATE "C" NOT NULL,
  id          text COLLATE "C" NOT NULL,
  type        text COLLATE "C" NOT NULL,
  status      text NOT NULL CHECK (status IN ('success', 'failed', 'info', 'warning')),
  username    text COLLATE "C",
  user_id     text COLLATE "C",
  client_id   text COLLATE "C",
  ip_address  text,
  user_agent  text,
  details     jsonb       NOT NULL DEFAULT '{}',
  "timestamp" timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_page ON audit_entries (tenant_id, "timestamp", id);
CREATE INDEX audit_type ON audit_entries (tenant_id, type);
CREATE INDEX audit_user ON audit_entries (tenant_id, user_id);

-- SQLite's table has no key; here an identity column gives it one that starts with tenant_id.
CREATE TABLE login_attempts (
  tenant_id text COLLATE "C" NOT NULL,
  id        bigint GENERATED ALWAYS AS IDENTITY,
  key       text COLLATE "C" NOT NULL,             -- 'account:<user id>' or 'ip:<address>'
  at        timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX login_attempts_key ON login_attempts (tenant_id, key, at);

-- End users (spec 2.3). DELETE anonymises: the row stays with deleted_at set and personal data erased.
CREATE TABLE users (
  tenant_id           text COLLATE "C" NOT NULL,
  id                  text COLLATE "C" NOT NULL,
  email               text COLLATE "C",            -- null once anonymised
  email_verified      boolean NOT NULL DEFAULT false,
  username            text COLLATE "C",
  given_name          text,
  family_name         text,
  name                text COLLATE "C",
  nickname            text,
  role                text COLLATE "C" NOT NULL DEFAULT 'user',
  account_enabled     boolean NOT NULL DEFAULT true,
  locked              boolean NOT NULL DEFAULT false,
  locked_until        timestamptz,                 -- brute-force lock expiry; null for admin locks
  auth_provider       text COLLATE "C" NOT NULL DEFAULT 'local',
  password_hash       text,
  mfa_enabled         boolean NOT NULL DEFAULT false,
  mfa_methods         jsonb   NOT NULL DEFAULT '[]',
  mfa_secret_sealed   text,
  mfa_recovery_sealed text,
  deleted_at          timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  last_login_at       timestamptz,
  PRIMARY KEY (tenant_id, id)
);
-- One live account per e-mail and per username in a tenant, compared case-insensitively (ASCII, as
-- SQLite); the same expressions serve the sign-in lookup. The index names are what the repository
-- reports as the conflicting field.
CREATE UNIQUE INDEX users_email ON users (tenant_id, lower(email)) WHERE deleted_at IS NULL AND email IS NOT NULL;
CREATE UNIQUE INDEX users_username ON users (tenant_id, lower(username)) WHERE deleted_at IS NULL AND username IS NOT NULL;
CREATE INDEX users_page ON users (tenant_id, created_at, id);

-- Dynamic-registration initial access tokens (spec 2.7, 4.8). Only the sha256 of the raw token is kept.
CREATE TABLE registration_tokens (
  tenant_id           text COLLATE "C" NOT NULL,
  jti                 text COLLATE "C" NOT NULL,
  token_hash          text COLLATE "C" NOT NULL,
  expires_at          timestamptz NOT NULL,
  max_usage_count     integer NOT NULL CHECK (max_usage_count >= 1),
  -- The CHECK is a second fence behind the conditional UPDATE of consumeUse: never past the max.
  current_usage_count integer NOT NULL DEFAULT 0 CHECK (current_usage_count >= 0 AND current_usage_count <= max_usage_count),
  policies            jsonb   NOT NULL,            -- array of policy names
  note                text,
  created_at          timestamptz NOT NULL,
  revoked_at          timestamptz,
  PRIMARY KEY (tenant_id, jti)
);
CREATE UNIQUE INDEX registration_tokens_hash ON registration_tokens (tenant_id, token_hash);
CREATE INDEX registration_tokens_page ON registration_tokens (tenant_id, created_at, jti);

-- ---------------------------------------------------------------------------------------------
-- Row-level security, enabled and FORCED (the owner is subject to it too). A row is visible and
-- writable only while the transaction has bound its tenant (SET LOCAL app.tenant_id, which the
-- service does first in every transaction). NULLIF: once a SET LOCAL ends, the setting reads ''
-- rather than NULL on that connection; '' must match nothing either.
ALTER TABLE clients ENABLE ROW LEVEL SECURITY;
ALTER TABLE clients FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON clients
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

ALTER TABLE oidc_payloads ENABLE ROW LEVEL SECURITY;
ALTER TABLE oidc_payloads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON oidc_payloads
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

ALTER TABLE signing_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE signing_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON signing_keys
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

ALTER TABLE audit_entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_entries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_entries
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

ALTER TABLE login_attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_attempts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON login_attempts
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE users FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON users
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

ALTER TABLE registration_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE registration_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON registration_tokens
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

-- ---------------------------------------------------------------------------------------------
-- The service role reads and writes rows; nothing else. No TRUNCATE (it ignores row-level
-- security), no DDL, no ownership. schema_migrations is readable so the service can check at start
-- that the schema is current.
GRANT SELECT, INSERT, UPDATE, DELETE
  ON clients, oidc_payloads, signing_keys, audit_entries, login_attempts, users, registration_tokens
  TO svc_app;
GRANT SELECT ON schema_migrations TO svc_app;
DO $$
BEGIN
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO svc_app', current_schema());
END
$$;
