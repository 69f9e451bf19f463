-- The tenant registry (CONTRACT.md tenant object). Multi-tenant mode runs on PostgreSQL only; the
-- table exists here so both backends implement the same Storage interface (and the contract tests
-- run on both). Rows belong to the platform tenant: tenant_id is always '_platforms'.

CREATE TABLE tenants (
  tenant_id    TEXT NOT NULL,
  slug         TEXT NOT NULL,
  id           TEXT NOT NULL,
  display_name TEXT NOT NULL,
  domain       TEXT,
  status       TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL,
  PRIMARY KEY (tenant_id, slug)
);
CREATE UNIQUE INDEX tenants_id ON tenants (tenant_id, id);
CREATE UNIQUE INDEX tenants_domain ON tenants (tenant_id, domain) WHERE domain IS NOT NULL;
CREATE INDEX tenants_page ON tenants (tenant_id, created_at, id);
