-- Issue 12 (hole 3): the svc:* scopes the registration token's creator held, as a JSON array. A
-- client registered with the token may be allowed only those. NULL for tokens made before: their
-- registrants get no svc:* scope at all.
ALTER TABLE registration_tokens ADD COLUMN creator_scopes TEXT;
