-- Passkeys (WebAuthn credentials) and their pending ceremony challenges (issue 14), tenant-scoped
-- under row-level security like every other table (001_init.sql, docs/postgresql.md).

CREATE TABLE webauthn_credentials (
  tenant_id    text COLLATE "C" NOT NULL,
  id           text COLLATE "C" NOT NULL,   -- credential ID, base64url
  user_id      text COLLATE "C" NOT NULL,
  public_key   text        NOT NULL,        -- COSE public key, base64url
  counter      bigint      NOT NULL DEFAULT 0 CHECK (counter >= 0),
  transports   jsonb       NOT NULL DEFAULT '[]',
  device_type  text        NOT NULL CHECK (device_type IN ('singleDevice', 'multiDevice')),
  backed_up    boolean     NOT NULL DEFAULT false,
  aaguid       text        NOT NULL DEFAULT '',
  name         text        NOT NULL,
  created_at   timestamptz NOT NULL,
  last_used_at timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webauthn_credentials_user ON webauthn_credentials (tenant_id, user_id, created_at);

-- One row per ceremony in progress: taken (deleted) by its first use, useless after expires_at.
CREATE TABLE webauthn_challenges (
  tenant_id  text COLLATE "C" NOT NULL,
  challenge  text COLLATE "C" NOT NULL,
  binding    text COLLATE "C" NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, challenge)
);
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges (tenant_id, expires_at);

ALTER TABLE webauthn_credentials ENABLE ROW LEVEL SECURITY;
ALTER TABLE webauthn_credentials FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webauthn_credentials
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

ALTER TABLE webauthn_challenges ENABLE ROW LEVEL SECURITY;
ALTER TABLE webauthn_challenges FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webauthn_challenges
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

GRANT SELECT, INSERT, UPDATE, DELETE ON webauthn_credentials, webauthn_challenges TO svc_app;
