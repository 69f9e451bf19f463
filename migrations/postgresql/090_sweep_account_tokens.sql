-- Cross-tenant removal of expired account tokens (password reset, e-mail verification), the same
-- way as OIDC artefacts in 002: svc_maintenance may see and delete only rows expired by the
-- database clock, through one SECURITY DEFINER function svc_app may execute, which returns a count
-- and never a row. A forged `before` in the future cannot delete a live token: the policies check
-- the expiry themselves. Without it the table only grows (readers already ignore expired rows).

GRANT SELECT (expires_at), DELETE ON account_tokens TO svc_maintenance;

CREATE POLICY maintenance_sweep_read ON account_tokens FOR SELECT TO svc_maintenance
  USING (expires_at <= now());
CREATE POLICY maintenance_sweep_delete ON account_tokens FOR DELETE TO svc_maintenance
  USING (expires_at <= now());

CREATE FUNCTION svc_sweep_account_tokens(before timestamptz) RETURNS bigint
  LANGUAGE sql
  SECURITY DEFINER
AS $$
  WITH gone AS (
    DELETE FROM account_tokens WHERE expires_at <= before RETURNING 1
  )
  SELECT count(*) FROM gone
$$;

-- search_path pinned to this schema, pg_temp last: a caller's temporary table named account_tokens
-- must not stand in for the real one.
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION svc_sweep_account_tokens(timestamptz) SET search_path = %I, pg_temp', current_schema());
END
$$;
ALTER FUNCTION svc_sweep_account_tokens(timestamptz) OWNER TO svc_maintenance;
REVOKE ALL ON FUNCTION svc_sweep_account_tokens(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_sweep_account_tokens(timestamptz) TO svc_app;
