-- Per-tenant configuration overrides (spec 1.5): one row per tenant and section, the section's
-- fields as a jsonb object. Sensitive fields are sealed by the service before they get here.
-- One row per section, so concurrent updates of different sections never overwrite each other.
-- The section names are checked by the service, not here: a release adding a section needs no
-- migration.

CREATE TABLE tenant_config (
  tenant_id  text COLLATE "C" NOT NULL,
  section    text COLLATE "C" NOT NULL,
  data       jsonb       NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, section)
);

ALTER TABLE tenant_config ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_config FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_config
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_config TO svc_app;
