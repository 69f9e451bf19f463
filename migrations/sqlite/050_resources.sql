-- API resources (issue 19, CONTRACT.md "API resources"): a tenant's own APIs, token audiences
-- besides the Management API. Timestamps are ISO 8601 UTC strings (text comparison orders them).

CREATE TABLE resources (
  tenant_id        TEXT    NOT NULL,
  id               TEXT    NOT NULL,
  identifier       TEXT    NOT NULL,
  name             TEXT    NOT NULL,
  scopes           TEXT    NOT NULL,              -- JSON array of {name, description}
  token_format     TEXT    NOT NULL CHECK (token_format IN ('jwt', 'opaque')),
  access_token_ttl INTEGER NOT NULL CHECK (access_token_ttl > 0),
  signing_alg      TEXT    NOT NULL,
  include_roles    INTEGER NOT NULL DEFAULT 0,
  created_at       TEXT    NOT NULL,
  updated_at       TEXT    NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
-- An identifier is a token audience: one resource per identifier within a tenant.
CREATE UNIQUE INDEX resources_identifier ON resources (tenant_id, identifier);
CREATE INDEX resources_page ON resources (tenant_id, created_at, id);
