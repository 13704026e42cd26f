-- Row-level security (issue 9, item 5): PostgreSQL itself keeps tenants
-- apart, so a query that forgets its tenant_id filter returns nothing of
-- another tenant instead of leaking it.
--
-- The serving process connects as the migrating role (the owner of every
-- table) and store.Open switches each pooled connection to perpetuity_app
-- (SET ROLE), a role that may not bypass row-level security. Every tenant
-- table lets that role see and write only the rows of the tenant its
-- transaction set (store.InTenant: set_config('app.tenant_id', id, true)).
-- Without a tenant it sees no tenant row at all.
--
-- The owner keeps full access through an explicit policy (FORCE makes
-- policies apply to the owner too): migrations run as the owner, and so do
-- the SECURITY DEFINER functions below, the few reads that come before a
-- tenant is known (key, session, sign-in, invitation) or that legitimately
-- span tenants (the tenant list). Each returns only what its caller needs.

-- Roles are cluster-wide: many databases (every test database, say) share
-- this one, so it is created once and may exist already. A concurrent
-- migration of another database may create it between the check and the
-- CREATE; that is the same outcome.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'perpetuity_app') THEN
        BEGIN
            CREATE ROLE perpetuity_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    -- SET ROLE needs membership; a superuser has it implicitly.
    IF NOT pg_has_role(current_user, 'perpetuity_app', 'MEMBER') THEN
        EXECUTE format('GRANT perpetuity_app TO %I', current_user);
    END IF;
END $$;

-- The tenant the current transaction acts for, NULL when none is set. After
-- a transaction that set it locally the setting reads '' (not NULL) for the
-- rest of the session, hence NULLIF. Inlined by the planner, so policies
-- compare tenant_id with a constant and use the tenant_id indexes.
CREATE FUNCTION app_tenant() RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT NULLIF(current_setting('app.tenant_id', true), '')::bigint
$$;

-- Every table with a tenant_id column, and tenants itself (keyed by id).
-- Tables whose tenant_id may be NULL hold rows of no tenant besides:
--   console_accounts: platform admins (tenant_id NULL) are reached only
--     through the sign-in and session functions below;
--   console_sessions: tenant_id is the tenant the session acts in (NULL for
--     a platform admin who has entered none); sessions are read and written
--     by token through functions, and a tenant admin's clean-up of its own
--     accounts' sessions runs in the tenant;
--   audit_log: tenant_id NULL marks platform events, written through
--     record_platform_audit and never read by the application.
-- Global tables stay without row-level security because no tenant wrote
-- them and they name no tenant: dictionaries and dictionary_entries (shared
-- dictionary data), console_throttle (failure counts per email or address,
-- looked up before any tenant is known) and schema_migrations (the
-- application may only read it).
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants TO perpetuity_app
    USING (id = app_tenant()) WITH CHECK (id = app_tenant());
CREATE POLICY owner_all ON tenants TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE tenant_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_heads TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON tenant_heads TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE memory_users ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_users FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_users TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON memory_users TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_keys TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON api_keys TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE conversations ENABLE ROW LEVEL SECURITY;
ALTER TABLE conversations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON conversations TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON conversations TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messages TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON messages TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE items ENABLE ROW LEVEL SECURITY;
ALTER TABLE items FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON items TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON items TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE retrieval_rows ENABLE ROW LEVEL SECURITY;
ALTER TABLE retrieval_rows FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON retrieval_rows TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON retrieval_rows TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE term_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE term_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON term_stats TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON term_stats TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE corpus_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE corpus_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON corpus_stats TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON corpus_stats TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE activations ENABLE ROW LEVEL SECURITY;
ALTER TABLE activations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON activations TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON activations TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE tenant_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_log TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON tenant_log TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE reheats ENABLE ROW LEVEL SECURITY;
ALTER TABLE reheats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON reheats TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON reheats TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE requests FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON requests TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON requests TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE console_accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE console_accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console_accounts TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON console_accounts TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE console_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE console_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console_sessions TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON console_sessions TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE console_invites ENABLE ROW LEVEL SECURITY;
ALTER TABLE console_invites FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console_invites TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON console_invites TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_log TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON audit_log TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE dict_rollouts ENABLE ROW LEVEL SECURITY;
ALTER TABLE dict_rollouts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON dict_rollouts TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON dict_rollouts TO CURRENT_USER USING (true) WITH CHECK (true);

-- Written by the items_birth trigger, which runs as the inserting role
-- inside the inserting (tenant) transaction.
ALTER TABLE item_births ENABLE ROW LEVEL SECURITY;
ALTER TABLE item_births FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON item_births TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON item_births TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE integrity_reports ENABLE ROW LEVEL SECURITY;
ALTER TABLE integrity_reports FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON integrity_reports TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON integrity_reports TO CURRENT_USER USING (true) WITH CHECK (true);

ALTER TABLE integrity_violations ENABLE ROW LEVEL SECURITY;
ALTER TABLE integrity_violations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON integrity_violations TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON integrity_violations TO CURRENT_USER USING (true) WITH CHECK (true);

-- Tenants, listed for the operations that walk them all (arena warm-up,
-- flipping every tenant, dictionary commands). The list names tenants; it
-- holds nothing a tenant stored.
CREATE FUNCTION list_tenants() RETURNS TABLE (id bigint, name text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT t.id, t.name FROM tenants t ORDER BY t.id
$$;

-- The platform admin's tenant list, with each tenant's account count.
CREATE FUNCTION platform_tenants() RETURNS TABLE (id bigint, name text, created_at timestamptz, accounts bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT t.id, t.name, t.created_at,
           (SELECT count(*) FROM console_accounts a WHERE a.tenant_id = t.id)
    FROM tenants t ORDER BY t.id
$$;

-- A new tenant and its log head; the rest of its first rows are written in
-- the tenant, in the same transaction. The head starts on the dictionary
-- most tenants serve, which takes a look across tenants: after a global
-- flip that is the new version, after a one-tenant trial the old one.
CREATE FUNCTION create_tenant(tenant_name text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH t AS (INSERT INTO tenants (name) VALUES (tenant_name) RETURNING tenants.id),
    h AS (INSERT INTO tenant_heads (tenant_id, dict_version)
        SELECT t.id, COALESCE((SELECT hh.dict_version FROM tenant_heads hh GROUP BY hh.dict_version
            ORDER BY count(*) DESC, hh.dict_version DESC LIMIT 1), 1)
        FROM t)
    SELECT t.id FROM t
$$;

-- A live console session by the SHA-256 of its token, with its account as
-- it is now. For a platform admin the acting tenant is the one entered; for
-- everyone else it is always the account's own, whatever the session says.
CREATE FUNCTION console_session(hash bytea, idle_secs double precision)
RETURNS TABLE (account_id bigint, email text, role text, home_tenant bigint, tenant_id bigint,
               tenant_name text, csrf_token text, last_seen_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT a.id, a.email, a.role, coalesce(a.tenant_id, 0),
           coalesce(CASE WHEN a.role = 'platform_admin' THEN s.tenant_id ELSE a.tenant_id END, 0),
           coalesce(t.name, ''), s.csrf_token, s.last_seen_at
    FROM console_sessions s
    JOIN console_accounts a ON a.id = s.account_id
    LEFT JOIN tenants t ON t.id = CASE WHEN a.role = 'platform_admin' THEN s.tenant_id ELSE a.tenant_id END
    WHERE s.token_hash = hash
      AND s.expires_at > now()
      AND s.last_seen_at > now() - make_interval(secs => idle_secs)
      AND a.disabled_at IS NULL
$$;

-- Records that the session was used, at most once a minute.
CREATE FUNCTION console_session_touch(hash bytea) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    UPDATE console_sessions s SET last_seen_at = now()
    WHERE s.token_hash = hash AND s.last_seen_at < now() - interval '1 minute'
$$;

-- Signs a session out.
CREATE FUNCTION console_session_end(hash bytea) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DELETE FROM console_sessions s WHERE s.token_hash = hash
$$;

-- Issues a session for an account acting in a tenant (NULL: none yet),
-- dropping the one the browser presented (old_hash, may be NULL) and the
-- account's expired ones. Only a platform admin may act in a tenant other
-- than its own; otherwise nothing is inserted and the result is NULL.
CREATE FUNCTION console_session_start(old_hash bytea, new_hash bytea, account bigint, acting_tenant bigint,
                                      csrf text, max_secs double precision) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DELETE FROM console_sessions s WHERE s.token_hash = old_hash;
    DELETE FROM console_sessions s WHERE s.account_id = account AND s.expires_at < now();
    INSERT INTO console_sessions (token_hash, account_id, tenant_id, csrf_token, expires_at)
    SELECT new_hash, a.id, acting_tenant, csrf, now() + make_interval(secs => max_secs)
    FROM console_accounts a
    WHERE a.id = account AND (a.role = 'platform_admin' OR a.tenant_id = acting_tenant)
    RETURNING true
$$;

-- Sign-in: the account with this (lower-cased) address, with what the
-- password check and the session need. tenant_id is 0 for a platform admin.
CREATE FUNCTION console_account_by_email(addr text)
RETURNS TABLE (id bigint, tenant_id bigint, password_hash text, role text, disabled boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT a.id, coalesce(a.tenant_id, 0), a.password_hash, a.role, a.disabled_at IS NOT NULL
    FROM console_accounts a WHERE lower(a.email) = addr
$$;

CREATE FUNCTION console_account_signed_in(account bigint) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    UPDATE console_accounts a SET last_sign_in_at = now() WHERE a.id = account
$$;

-- Addresses are unique across the service (sign-in asks for no tenant), so
-- sign-up and invitations ask whether any tenant holds one already.
CREATE FUNCTION console_email_taken(addr text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM console_accounts a WHERE lower(a.email) = addr)
$$;

-- A pending invitation by the SHA-256 of its token, with its tenant's name;
-- accepting it then runs in that tenant.
CREATE FUNCTION console_invite(hash bytea)
RETURNS TABLE (tenant_id bigint, id bigint, email text, role text, tenant_name text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT i.tenant_id, i.id, i.email, i.role, t.name
    FROM console_invites i JOIN tenants t ON t.id = i.tenant_id
    WHERE i.token_hash = hash AND i.accepted_at IS NULL AND i.expires_at > now()
$$;

-- A platform admin belongs to no tenant.
CREATE FUNCTION console_create_platform_admin(addr text, pw_hash text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    INSERT INTO console_accounts (tenant_id, email, password_hash, role)
    VALUES (NULL, addr, pw_hash, 'platform_admin') RETURNING id
$$;

-- A platform-level audit entry (tenant_id NULL): written, never read back
-- by the application.
CREATE FUNCTION record_platform_audit(who bigint, who_email text, act text, tgt text, info jsonb, addr text)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    INSERT INTO audit_log (tenant_id, actor_id, actor_email, action, target, detail, address)
    VALUES (NULL, who, who_email, act, tgt, info, addr)
$$;

-- What the application role may do. No TRUNCATE, no DDL; schema_migrations
-- is read-only to it (readiness reads the version).
GRANT USAGE ON SCHEMA public TO perpetuity_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO perpetuity_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO perpetuity_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO perpetuity_app;
DO $$
BEGIN
    IF to_regclass('public.schema_migrations') IS NOT NULL THEN
        REVOKE INSERT, UPDATE, DELETE ON public.schema_migrations FROM perpetuity_app;
    END IF;
END $$;
-- Tables, sequences and functions later migrations create get the same.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO perpetuity_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO perpetuity_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO perpetuity_app;

-- Functions that run as the owner are for the application only, not for
-- any other role the database may have.
REVOKE EXECUTE ON FUNCTION resolve_api_key(bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION list_tenants() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION platform_tenants() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION create_tenant(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_session(bytea, double precision) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_session_touch(bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_session_end(bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_session_start(bytea, bytea, bigint, bigint, text, double precision) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_account_by_email(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_account_signed_in(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_email_taken(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_invite(bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_create_platform_admin(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION record_platform_audit(bigint, text, text, text, jsonb, text) FROM PUBLIC;
