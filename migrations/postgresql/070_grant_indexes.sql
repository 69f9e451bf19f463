-- Grants of an account (user erasure, session revocation) and of a client (client statistics) are
-- found through these indexes instead of reading every Grant of the tenant (issue 11). oidc-provider
-- writes accountId and clientId into every Grant payload; the expressions match the queries in
-- storage/postgresql/oidc.ts. Row-level security is unchanged: the table's policy covers the
-- indexes' rows like any other.
CREATE INDEX oidc_payloads_grant_account ON oidc_payloads (tenant_id, (payload ->> 'accountId')) WHERE model = 'Grant';
CREATE INDEX oidc_payloads_grant_client ON oidc_payloads (tenant_id, (payload ->> 'clientId')) WHERE model = 'Grant';
