-- Reveals and reset links are short-lived: dropping them loses a secret
-- not yet shown (its key stays and can be revoked) and links not yet used
-- (issue another). Policies and grants go with the tables.
DROP FUNCTION IF EXISTS console_reset_use(bytea, text);
DROP FUNCTION IF EXISTS console_reset_pending(bytea);
DROP FUNCTION IF EXISTS console_reset_issue(text, bytea, double precision, text);
DROP TABLE IF EXISTS console_password_resets;
DROP TABLE IF EXISTS console_reveals;
