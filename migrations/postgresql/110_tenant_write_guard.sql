-- The write guard of a registered tenant (docs/decisions.md "Tenant delete against writes in
-- flight"). Every write transaction of a tenant other than the built-in ones calls
-- svc_tenant_write_guard('<slug>') right after binding the tenant, in the same round trip
-- (src/storage/postgresql/tenant-db.ts); the tenant's delete (src/storage/postgresql/tenants.ts)
-- takes the same advisory lock in exclusive mode before it removes the record and purges the data.
--
-- So a delete waits for the writes already in flight (their rows are committed, and purged, before
-- the purge's statements take their snapshots), and a write that starts once the delete holds the
-- lock waits for it to commit, then finds no record and fails with SQLSTATE SV404 before it has
-- written anything; the service answers that with the tenant-not-found 404.
--
-- An advisory lock rather than FOR KEY SHARE on the tenants row: a row lock writes the row (its
-- xmax, a WAL record, a MultiXact when writers overlap), which would make every write of every
-- tenant dirty the registry's few heap pages; a shared advisory lock lives in the lock table only.
-- The check is a statement of its own after the lock, so its snapshot sees a delete that
-- committed while the guard waited (a VOLATILE function takes a new snapshot per statement).
--
-- The registry belongs to `_platforms` (003_tenants.sql): the function binds it for its own
-- duration (the SET clause; the caller's binding is back when it returns). Any session of
-- svc_app may bind `_platforms` anyway, so the function grants nothing new.

CREATE FUNCTION svc_tenant_write_guard(tenant text) RETURNS void
  LANGUAGE plpgsql
  VOLATILE
  SET app.tenant_id = '_platforms'
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext('svc.tenant'), hashtext(tenant));
  PERFORM FROM tenants WHERE tenant_id = '_platforms' AND slug = tenant;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'tenant % does not exist', tenant USING ERRCODE = 'SV404';
  END IF;
END
$$;

REVOKE ALL ON FUNCTION svc_tenant_write_guard(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_tenant_write_guard(text) TO svc_app;
