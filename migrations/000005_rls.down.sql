-- Reverses 000005: functions, policies, row-level security and every
-- privilege of perpetuity_app in this database. The role itself is
-- cluster-wide and other databases may still grant it privileges (every
-- test database does), so it is dropped only when nothing holds it.

DROP FUNCTION IF EXISTS record_platform_audit(bigint, text, text, text, jsonb, text);
DROP FUNCTION IF EXISTS console_create_platform_admin(text, text);
DROP FUNCTION IF EXISTS console_invite(bytea);
DROP FUNCTION IF EXISTS console_email_taken(text);
DROP FUNCTION IF EXISTS console_account_signed_in(bigint);
DROP FUNCTION IF EXISTS console_account_by_email(text);
DROP FUNCTION IF EXISTS console_session_start(bytea, bytea, bigint, bigint, text, double precision);
DROP FUNCTION IF EXISTS console_session_end(bytea);
DROP FUNCTION IF EXISTS console_session_touch(bytea);
DROP FUNCTION IF EXISTS console_session(bytea, double precision);
DROP FUNCTION IF EXISTS create_tenant(text);
DROP FUNCTION IF EXISTS platform_tenants();
DROP FUNCTION IF EXISTS list_tenants();
GRANT EXECUTE ON FUNCTION resolve_api_key(bytea) TO PUBLIC;

DROP POLICY IF EXISTS tenant_isolation ON tenants;
DROP POLICY IF EXISTS owner_all ON tenants;
ALTER TABLE tenants NO FORCE ROW LEVEL SECURITY;
ALTER TABLE tenants DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON tenant_heads;
DROP POLICY IF EXISTS owner_all ON tenant_heads;
ALTER TABLE tenant_heads NO FORCE ROW LEVEL SECURITY;
ALTER TABLE tenant_heads DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON memory_users;
DROP POLICY IF EXISTS owner_all ON memory_users;
ALTER TABLE memory_users NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memory_users DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON api_keys;
DROP POLICY IF EXISTS owner_all ON api_keys;
ALTER TABLE api_keys NO FORCE ROW LEVEL SECURITY;
ALTER TABLE api_keys DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON conversations;
DROP POLICY IF EXISTS owner_all ON conversations;
ALTER TABLE conversations NO FORCE ROW LEVEL SECURITY;
ALTER TABLE conversations DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON messages;
DROP POLICY IF EXISTS owner_all ON messages;
ALTER TABLE messages NO FORCE ROW LEVEL SECURITY;
ALTER TABLE messages DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON items;
DROP POLICY IF EXISTS owner_all ON items;
ALTER TABLE items NO FORCE ROW LEVEL SECURITY;
ALTER TABLE items DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON retrieval_rows;
DROP POLICY IF EXISTS owner_all ON retrieval_rows;
ALTER TABLE retrieval_rows NO FORCE ROW LEVEL SECURITY;
ALTER TABLE retrieval_rows DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON term_stats;
DROP POLICY IF EXISTS owner_all ON term_stats;
ALTER TABLE term_stats NO FORCE ROW LEVEL SECURITY;
ALTER TABLE term_stats DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON corpus_stats;
DROP POLICY IF EXISTS owner_all ON corpus_stats;
ALTER TABLE corpus_stats NO FORCE ROW LEVEL SECURITY;
ALTER TABLE corpus_stats DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON activations;
DROP POLICY IF EXISTS owner_all ON activations;
ALTER TABLE activations NO FORCE ROW LEVEL SECURITY;
ALTER TABLE activations DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON tenant_log;
DROP POLICY IF EXISTS owner_all ON tenant_log;
ALTER TABLE tenant_log NO FORCE ROW LEVEL SECURITY;
ALTER TABLE tenant_log DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON reheats;
DROP POLICY IF EXISTS owner_all ON reheats;
ALTER TABLE reheats NO FORCE ROW LEVEL SECURITY;
ALTER TABLE reheats DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON requests;
DROP POLICY IF EXISTS owner_all ON requests;
ALTER TABLE requests NO FORCE ROW LEVEL SECURITY;
ALTER TABLE requests DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON console_accounts;
DROP POLICY IF EXISTS owner_all ON console_accounts;
ALTER TABLE console_accounts NO FORCE ROW LEVEL SECURITY;
ALTER TABLE console_accounts DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON console_sessions;
DROP POLICY IF EXISTS owner_all ON console_sessions;
ALTER TABLE console_sessions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE console_sessions DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON console_invites;
DROP POLICY IF EXISTS owner_all ON console_invites;
ALTER TABLE console_invites NO FORCE ROW LEVEL SECURITY;
ALTER TABLE console_invites DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON audit_log;
DROP POLICY IF EXISTS owner_all ON audit_log;
ALTER TABLE audit_log NO FORCE ROW LEVEL SECURITY;
ALTER TABLE audit_log DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON dict_rollouts;
DROP POLICY IF EXISTS owner_all ON dict_rollouts;
ALTER TABLE dict_rollouts NO FORCE ROW LEVEL SECURITY;
ALTER TABLE dict_rollouts DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON item_births;
DROP POLICY IF EXISTS owner_all ON item_births;
ALTER TABLE item_births NO FORCE ROW LEVEL SECURITY;
ALTER TABLE item_births DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON integrity_reports;
DROP POLICY IF EXISTS owner_all ON integrity_reports;
ALTER TABLE integrity_reports NO FORCE ROW LEVEL SECURITY;
ALTER TABLE integrity_reports DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON integrity_violations;
DROP POLICY IF EXISTS owner_all ON integrity_violations;
ALTER TABLE integrity_violations NO FORCE ROW LEVEL SECURITY;
ALTER TABLE integrity_violations DISABLE ROW LEVEL SECURITY;

DROP FUNCTION IF EXISTS app_tenant();

ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM perpetuity_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM perpetuity_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON FUNCTIONS FROM perpetuity_app;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM perpetuity_app;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM perpetuity_app;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM perpetuity_app;
REVOKE ALL ON SCHEMA public FROM perpetuity_app;

-- Fails (and is let fail) while another database still grants the role
-- anything, or when this role may not drop it. DROP ROLE reads every
-- database's dependencies, so a database dropped at that moment (tests and
-- the bench drop theirs concurrently) fails it with "cache lookup failed
-- for database", an internal error: the role is kept then as well.
DO $$
BEGIN
    DROP ROLE IF EXISTS perpetuity_app;
EXCEPTION WHEN dependent_objects_still_exist OR insufficient_privilege OR object_in_use OR internal_error THEN
    RAISE NOTICE 'role perpetuity_app kept: %', SQLERRM;
END $$;
