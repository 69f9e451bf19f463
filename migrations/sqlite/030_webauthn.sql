-- Passkeys (WebAuthn credentials) and their pending ceremony challenges (issue 14).
-- Timestamps are ISO 8601 UTC strings from Date.toISOString(), so text comparison orders them.

CREATE TABLE webauthn_credentials (
  tenant_id    TEXT    NOT NULL,
  id           TEXT    NOT NULL,            -- credential ID, base64url
  user_id      TEXT    NOT NULL,
  public_key   TEXT    NOT NULL,            -- COSE public key, base64url
  counter      INTEGER NOT NULL DEFAULT 0 CHECK (counter >= 0),
  transports   TEXT    NOT NULL DEFAULT '[]', -- JSON array of AuthenticatorTransport
  device_type  TEXT    NOT NULL CHECK (device_type IN ('singleDevice', 'multiDevice')),
  backed_up    INTEGER NOT NULL DEFAULT 0,
  aaguid       TEXT    NOT NULL DEFAULT '',
  name         TEXT    NOT NULL,
  created_at   TEXT    NOT NULL,
  last_used_at TEXT,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webauthn_credentials_user ON webauthn_credentials (tenant_id, user_id, created_at);

-- One row per ceremony in progress: taken (deleted) by its first use, useless after expires_at.
CREATE TABLE webauthn_challenges (
  tenant_id  TEXT NOT NULL,
  challenge  TEXT NOT NULL,                 -- base64url, as the authenticator signs it
  binding    TEXT NOT NULL,                 -- purpose, session or interaction, user
  expires_at TEXT NOT NULL,
  PRIMARY KEY (tenant_id, challenge)
);
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges (tenant_id, expires_at);
