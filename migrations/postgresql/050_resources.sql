-- API resources (issue 19, CONTRACT.md "API resources"): a tenant's own APIs, token audiences
-- besides the Management API. Tenant-scoped under row-level security like every tenant table.

CREATE TABLE resources (
  tenant_id        text COLLATE "C" NOT NULL,
  id               text COLLATE "C" NOT NULL,
  identifier       text COLLATE "C" NOT NULL,
  name             text        NOT NULL,
  scopes           jsonb       NOT NULL,           -- array of {name, description}
  token_format     text COLLATE "C" NOT NULL CHECK (token_format IN ('jwt', 'opaque')),
  access_token_ttl integer     NOT NULL CHECK (access_token_ttl > 0),
  signing_alg      text COLLATE "C" NOT NULL,
  include_roles    boolean     NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
-- An identifier is a token audience: one resource per identifier within a tenant.
CREATE UNIQUE INDEX resources_identifier ON resources (tenant_id, identifier);
CREATE INDEX resources_page ON resources (tenant_id, created_at, id);

ALTER TABLE resources ENABLE ROW LEVEL SECURITY;
ALTER TABLE resources FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON resources
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

GRANT SELECT, INSERT, UPDATE, DELETE ON resources TO svc_app;
