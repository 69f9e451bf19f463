-- Cross-tenant maintenance: OidcPayloadRepository.sweepExpired drops expired artefacts of every
-- tenant, which the service role cannot do (it sees one tenant at a time). Rather than giving the
-- service a way around row-level security, a NOLOGIN role svc_maintenance may read and delete only
-- rows that are expired by the database clock, and only through one SECURITY DEFINER function the
-- service may execute. The function returns a count; it never shows a row. Even a forged `before`
-- far in the future cannot delete a live artefact: the policy itself checks the expiry.

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'svc_maintenance') THEN
    BEGIN
      CREATE ROLE svc_maintenance NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created by a concurrent migration of another database
    END;
  END IF;
  -- Giving the function to svc_maintenance needs membership (a superuser has it implicitly).
  IF NOT pg_has_role(current_user, 'svc_maintenance', 'MEMBER') THEN
    EXECUTE format('GRANT svc_maintenance TO %I', current_user);
  END IF;
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO svc_maintenance', current_schema());
END
$$;

GRANT SELECT (expires_at), DELETE ON oidc_payloads TO svc_maintenance;

-- Permissive policies add to tenant_isolation for this role only. A DELETE with a WHERE clause
-- needs both: the SELECT policy to read the rows, the DELETE policy to remove them.
CREATE POLICY maintenance_sweep_read ON oidc_payloads FOR SELECT TO svc_maintenance
  USING (expires_at IS NOT NULL AND expires_at <= extract(epoch FROM now()));
CREATE POLICY maintenance_sweep_delete ON oidc_payloads FOR DELETE TO svc_maintenance
  USING (expires_at IS NOT NULL AND expires_at <= extract(epoch FROM now()));

CREATE FUNCTION svc_sweep_oidc_payloads(before bigint) RETURNS bigint
  LANGUAGE sql
  SECURITY DEFINER
AS $$
  WITH gone AS (
    DELETE FROM oidc_payloads WHERE expires_at IS NOT NULL AND expires_at <= before RETURNING 1
  )
  SELECT count(*) FROM gone
$$;

-- search_path pinned to this schema, pg_temp last: a caller's temporary table named oidc_payloads
-- must not stand in for the real one.
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION svc_sweep_oidc_payloads(bigint) SET search_path = %I, pg_temp', current_schema());
END
$$;
ALTER FUNCTION svc_sweep_oidc_payloads(bigint) OWNER TO svc_maintenance;
REVOKE ALL ON FUNCTION svc_sweep_oidc_payloads(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_sweep_oidc_payloads(bigint) TO svc_app;
