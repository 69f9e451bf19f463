-- Social login (src/social): which upstream account (provider + its subject) signs in which user.
-- One upstream account belongs to at most one user of a tenant; a user may link several.

CREATE TABLE social_identities (
  tenant_id    TEXT NOT NULL,
  provider     TEXT NOT NULL,              -- the configured provider name (google, corp-sso, ...)
  subject      TEXT NOT NULL,              -- the upstream's stable user id (sub / id)
  user_id      TEXT NOT NULL,
  email        TEXT,                       -- the upstream e-mail when linked (information only)
  linked_at    TEXT NOT NULL,
  last_used_at TEXT,
  PRIMARY KEY (tenant_id, provider, subject)
);

CREATE INDEX social_identities_user ON social_identities (tenant_id, user_id);
