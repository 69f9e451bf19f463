-- An end user's own choices on the account page (security-alert preferences), one jsonb object per
-- user. Tenant-scoped with forced row-level security like every tenant table.
CREATE TABLE user_preferences (
  tenant_id  text COLLATE "C" NOT NULL,
  user_id    text COLLATE "C" NOT NULL,
  data       jsonb NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, user_id)
);

ALTER TABLE user_preferences ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_preferences FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON user_preferences
  USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
  WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

GRANT SELECT, INSERT, UPDATE, DELETE ON user_preferences TO svc_app;
