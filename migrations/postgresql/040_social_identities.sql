-- Social login (src/social): which upstream account (provider + its subject) signs in which user.
-- One upstream account belongs to at most one user of a tenant; a user may link several.

CREATE TABLE social_identities (
  tenant_id    text COLLATE "C" NOT NULL,
  provider     text COLLATE "C" NOT NULL,  -- the configured provider name (google, corp-sso, ...)
  subject      text COLLATE "C" NOT NULL,  -- the upstream's stable user id (sub / id)
  user_id      text COLLATE "C" NOT NULL,
  email        text,                       -- the upstream e-mail when linked (information only)
  linked_at    timestamptz NOT NULL,
  last_used_at timestamptz,
  PRIMARY KEY (tenant_id, provider, subject)
);

CREATE INDEX social_identities_user ON social_identities (tenant_id, user_id);

ALTER TABLE social_identities ENABLE ROW LEVEL SECURITY;
ALTER TABLE social_identities FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON social_identities
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

GRANT SELECT, INSERT, UPDATE, DELETE ON social_identities TO svc_app;
