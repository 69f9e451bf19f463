-- The tenant registry of multi-tenant mode (CONTRACT.md tenant object; docs/postgresql.md "The
-- tenant registry"). It is platform data: every row belongs to the platform tenant `_platforms`
-- (tenant_id = '_platforms'), so the ordinary tenant_isolation policy applies unchanged and only a
-- transaction bound to `_platforms` sees the registry. The repository (src/storage/postgresql/
-- tenants.ts) binds `_platforms` for every call; a transaction bound to an ordinary tenant sees no
-- registry row at all, not even its own. `default` is hard-coded and never stored.

CREATE TABLE tenants (
  tenant_id    text COLLATE "C" NOT NULL,          -- always '_platforms' (the owner of the registry)
  slug         text COLLATE "C" NOT NULL,
  id           text COLLATE "C" NOT NULL,
  display_name text NOT NULL,
  domain       text COLLATE "C",
  status       text NOT NULL CHECK (status IN ('active', 'suspended')),
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, slug)
);
CREATE UNIQUE INDEX tenants_id ON tenants (tenant_id, id);
-- A custom domain names one tenant only.
CREATE UNIQUE INDEX tenants_domain ON tenants (tenant_id, domain) WHERE domain IS NOT NULL;
CREATE INDEX tenants_page ON tenants (tenant_id, created_at, id);

ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

GRANT SELECT, INSERT, UPDATE, DELETE ON tenants TO svc_app;
