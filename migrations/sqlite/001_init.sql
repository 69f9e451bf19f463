-- Every table carries tenant_id, even on SQLite (single tenant), so that the repositories have one shape.

CREATE TABLE clients (
  tenant_id         TEXT    NOT NULL,
  client_id         TEXT    NOT NULL,
  secret_hash       TEXT,
  secret_sealed     TEXT,
  secret_generation INTEGER NOT NULL DEFAULT 0,
  metadata          TEXT    NOT NULL,            -- JSON, spec 2.2 fields
  client_name       TEXT    NOT NULL,            -- copies for filtering and search
  application_type  TEXT    NOT NULL,
  description       TEXT,
  active            INTEGER NOT NULL DEFAULT 1,
  created_at        TEXT    NOT NULL,
  updated_at        TEXT    NOT NULL,
  last_used_at      TEXT,
  tokens_issued     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, client_id)
);
CREATE INDEX clients_page ON clients (tenant_id, created_at, client_id);

CREATE TABLE oidc_payloads (
  tenant_id   TEXT    NOT NULL,
  model       TEXT    NOT NULL,
  id          TEXT    NOT NULL,
  payload     TEXT    NOT NULL,
  grant_id    TEXT,
  user_code   TEXT,
  uid         TEXT,
  expires_at  INTEGER,                           -- epoch seconds
  consumed_at INTEGER,
  PRIMARY KEY (tenant_id, model, id)
);
CREATE INDEX oidc_payloads_grant ON oidc_payloads (tenant_id, grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oidc_payloads_user_code ON oidc_payloads (tenant_id, model, user_code) WHERE user_code IS NOT NULL;
CREATE INDEX oidc_payloads_uid ON oidc_payloads (tenant_id, model, uid) WHERE uid IS NOT NULL;
CREATE INDEX oidc_payloads_expiry ON oidc_payloads (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE signing_keys (
  tenant_id        TEXT    NOT NULL,
  kid              TEXT    NOT NULL,
  alg              TEXT    NOT NULL,
  use              TEXT    NOT NULL DEFAULT 'sig',
  status           TEXT    NOT NULL CHECK (status IN ('active', 'expiring', 'retired')),
  promoted         INTEGER NOT NULL DEFAULT 0,
  public_jwk       TEXT    NOT NULL,
  private_sealed   TEXT    NOT NULL,
  created_at       TEXT    NOT NULL,
  rotated_at       TEXT,
  expires_at       TEXT,
  retire_requested INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, kid)
);

CREATE TABLE audit_entries (
  tenant_id  TEXT NOT NULL,
  id         TEXT NOT NULL,
  type       TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN ('success', 'failed', 'info', 'warning')),
  username   TEXT,
  user_id    TEXT,
  client_id  TEXT,
  ip_address TEXT,
  user_agent TEXT,
  details    TEXT NOT NULL DEFAULT '{}',
  timestamp  TEXT NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_page ON audit_entries (tenant_id, timestamp, id);
CREATE INDEX audit_type ON audit_entries (tenant_id, type);
CREATE INDEX audit_user ON audit_entries (tenant_id, user_id);
