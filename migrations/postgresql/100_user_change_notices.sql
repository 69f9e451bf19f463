-- Change notices for the users table (issue 17): every UPDATE and DELETE of a user, whoever makes
-- it (an instance, `svc` CLI commands, psql), sends NOTIFY svc_users with the row's
-- [tenant_id, id] as JSON once its transaction commits; TRUNCATE sends '*'. Each instance LISTENs
-- and evicts the user from the memory its token paths read (src/storage/postgresql/user-cache.ts).
-- Inserts send nothing: a user not found is never kept. The payload names rows, never their data.
-- Triggers do not fire under session_replication_role = replica (logical replication, some
-- restores): instances must be restarted after writing users that way (docs/postgresql.md).

CREATE FUNCTION svc_user_changed() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('svc_users', json_build_array(OLD.tenant_id, OLD.id)::text);
  IF TG_OP = 'UPDATE' AND (NEW.tenant_id, NEW.id) IS DISTINCT FROM (OLD.tenant_id, OLD.id) THEN
    PERFORM pg_notify('svc_users', json_build_array(NEW.tenant_id, NEW.id)::text);
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION svc_users_truncated() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('svc_users', '*');
  RETURN NULL;
END
$$;

CREATE TRIGGER users_changed AFTER UPDATE OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION svc_user_changed();
CREATE TRIGGER users_truncated AFTER TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION svc_users_truncated();
