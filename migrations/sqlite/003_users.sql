-- End users (spec 2.3). DELETE anonymises: the row stays with deleted_at set and personal data erased.

CREATE TABLE users (
  tenant_id           TEXT    NOT NULL,
  id                  TEXT    NOT NULL,
  email               TEXT,                        -- null once anonymised
  email_verified      INTEGER NOT NULL DEFAULT 0,
  username            TEXT,
  given_name          TEXT,
  family_name         TEXT,
  name                TEXT,
  nickname            TEXT,
  role                TEXT    NOT NULL DEFAULT 'user',
  account_enabled     INTEGER NOT NULL DEFAULT 1,
  locked              INTEGER NOT NULL DEFAULT 0,
  locked_until        TEXT,                        -- brute-force lock expiry; null for admin locks
  auth_provider       TEXT    NOT NULL DEFAULT 'local',
  password_hash       TEXT,
  mfa_enabled         INTEGER NOT NULL DEFAULT 0,
  mfa_methods         TEXT    NOT NULL DEFAULT '[]', -- JSON array of strings
  mfa_secret_sealed   TEXT,
  mfa_recovery_sealed TEXT,
  deleted_at          TEXT,
  created_at          TEXT    NOT NULL,
  updated_at          TEXT    NOT NULL,
  last_login_at       TEXT,
  PRIMARY KEY (tenant_id, id)
);

-- One live account per e-mail and per username in a tenant, compared case-insensitively; the same
-- expressions serve the sign-in lookup. Anonymised rows are outside the index (their values are null anyway).
CREATE UNIQUE INDEX users_email ON users (tenant_id, lower(email)) WHERE deleted_at IS NULL AND email IS NOT NULL;
CREATE UNIQUE INDEX users_username ON users (tenant_id, lower(username)) WHERE deleted_at IS NULL AND username IS NOT NULL;
CREATE INDEX users_page ON users (tenant_id, created_at, id);
