-- Grants of an account (user erasure, session revocation) and of a client (client statistics) are
-- found through these indexes instead of reading every Grant of the tenant (issue 11). oidc-provider
-- writes accountId and clientId into every Grant payload; the expressions must match the queries in
-- storage/sqlite/oidc.ts exactly, and `model = 'Grant'` is a literal there so the partial index
-- applies. Sessions by account get the same (the PostgreSQL schema has had it since 001).
CREATE INDEX oidc_payloads_grant_account ON oidc_payloads (tenant_id, json_extract(payload, '$.accountId')) WHERE model = 'Grant';
CREATE INDEX oidc_payloads_grant_client ON oidc_payloads (tenant_id, json_extract(payload, '$.clientId')) WHERE model = 'Grant';
CREATE INDEX oidc_payloads_session_account ON oidc_payloads (tenant_id, json_extract(payload, '$.accountId')) WHERE model = 'Session';
