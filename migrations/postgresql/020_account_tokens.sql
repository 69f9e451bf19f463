-- Single-use tokens mailed to end users (password reset, e-mail verification). Only the sha256 of
-- the raw token is kept. Tenant-scoped with forced row-level security like every tenant table.
CREATE TABLE account_tokens (
  tenant_id   text COLLATE "C" NOT NULL,
  token_hash  text COLLATE "C" NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('password_reset', 'verify_email')),
  user_id     text COLLATE "C" NOT NULL,
  email       text NOT NULL,
  data        jsonb,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  PRIMARY KEY (tenant_id, token_hash)
);
CREATE INDEX account_tokens_email ON account_tokens (tenant_id, kind, email, created_at);
CREATE INDEX account_tokens_user ON account_tokens (tenant_id, user_id, kind);

ALTER TABLE account_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE account_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON account_tokens
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

GRANT SELECT, INSERT, UPDATE, DELETE ON account_tokens TO svc_app;
