-- An end user's own choices on the account page (security-alert preferences), one JSON object per user.
CREATE TABLE user_preferences (
  tenant_id  TEXT NOT NULL,
  user_id    TEXT NOT NULL,
  data       TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (tenant_id, user_id)
);
