CREATE TABLE login_attempts (
  tenant_id TEXT NOT NULL,
  key       TEXT NOT NULL,     -- 'account:<user id>' or 'ip:<address>'
  at        TEXT NOT NULL
);
CREATE INDEX login_attempts_key ON login_attempts (tenant_id, key, at);
