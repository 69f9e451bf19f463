-- Per-tenant configuration overrides (spec 1.5): one row per tenant and section, the section's
-- fields as a JSON object. Sensitive fields are sealed by the service before they get here.

CREATE TABLE tenant_config (
  tenant_id  TEXT NOT NULL,
  section    TEXT NOT NULL,
  data       TEXT NOT NULL,      -- JSON object
  updated_at TEXT NOT NULL,
  PRIMARY KEY (tenant_id, section)
);
