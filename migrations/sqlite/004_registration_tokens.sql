-- Dynamic-registration initial access tokens (spec 2.7, 4.8). Only the sha256 of the raw token is kept.
-- Timestamps are ISO 8601 UTC strings from Date.toISOString(), so text comparison orders them.

CREATE TABLE registration_tokens (
  tenant_id           TEXT    NOT NULL,
  jti                 TEXT    NOT NULL,
  token_hash          TEXT    NOT NULL,
  expires_at          TEXT    NOT NULL,
  max_usage_count     INTEGER NOT NULL CHECK (max_usage_count >= 1),
  -- The CHECK is a second fence behind the conditional UPDATE of consumeUse: never past the max.
  current_usage_count INTEGER NOT NULL DEFAULT 0 CHECK (current_usage_count >= 0 AND current_usage_count <= max_usage_count),
  policies            TEXT    NOT NULL,            -- JSON array of policy names
  note                TEXT,
  created_at          TEXT    NOT NULL,
  revoked_at          TEXT,
  PRIMARY KEY (tenant_id, jti)
);
CREATE UNIQUE INDEX registration_tokens_hash ON registration_tokens (tenant_id, token_hash);
CREATE INDEX registration_tokens_page ON registration_tokens (tenant_id, created_at, jti);
