DROP TABLE IF EXISTS console_throttle;
DROP TABLE IF EXISTS audit_log;
DROP TABLE IF EXISTS console_invites;
DROP TABLE IF EXISTS console_sessions;
DROP TABLE IF EXISTS console_accounts;
