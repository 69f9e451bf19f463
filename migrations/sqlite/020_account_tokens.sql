-- Single-use tokens mailed to end users (password reset, e-mail verification). Only the sha256 of
-- the raw token is kept. Timestamps are ISO 8601 UTC strings (text comparison orders them).
CREATE TABLE account_tokens (
  tenant_id   TEXT NOT NULL,
  token_hash  TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('password_reset', 'verify_email')),
  user_id     TEXT NOT NULL,
  email       TEXT NOT NULL,
  data        TEXT,             -- JSON object (e.g. the interaction a sign-up came from)
  created_at  TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  used_at     TEXT,
  PRIMARY KEY (tenant_id, token_hash)
);
CREATE INDEX account_tokens_email ON account_tokens (tenant_id, kind, email, created_at);
CREATE INDEX account_tokens_user ON account_tokens (tenant_id, user_id, kind);
