-- Citus-ready schema (issue 21, item 5). On Citus, every unique key and
-- foreign key of a table distributed by tenant must include tenant_id, the
-- distribution column: a shard can only enforce what lives on it. Two
-- unique keys spanned tenants because they are what names the tenant: an
-- API key's hash and an invitation token's hash. They move to lookup
-- tables that stay on the coordinator (deploy/citus/distribute.sql), each
-- row written in the same transaction as its key or invitation; the
-- functions that find a key or an invitation before its tenant is known
-- read the lookup, then the tenant's row by (tenant_id, id), which Citus
-- routes to one shard. migrations/citus_test.go checks the whole catalog.

CREATE TABLE key_lookup (
    key_hash  bytea PRIMARY KEY,
    tenant_id bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key_id    bigint NOT NULL
);
INSERT INTO key_lookup (key_hash, tenant_id, key_id) SELECT key_hash, tenant_id, id FROM api_keys;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_key_hash_key;

CREATE TABLE invite_lookup (
    token_hash bytea PRIMARY KEY,
    tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    invite_id  bigint NOT NULL
);
INSERT INTO invite_lookup (token_hash, tenant_id, invite_id) SELECT token_hash, tenant_id, id FROM console_invites;
ALTER TABLE console_invites DROP CONSTRAINT console_invites_token_hash_key;
-- An invitation names who made it; console accounts stay on the
-- coordinator, and a distributed table cannot reference a coordinator
-- table. Accounts are disabled, never deleted, so the id stays meaningful.
ALTER TABLE console_invites DROP CONSTRAINT console_invites_invited_by_fkey;

-- The application writes its tenant's lookup rows inside the tenant's
-- transaction; the owner (the functions below) reads them by hash.
ALTER TABLE key_lookup ENABLE ROW LEVEL SECURITY;
ALTER TABLE key_lookup FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON key_lookup TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON key_lookup TO CURRENT_USER USING (true) WITH CHECK (true);
ALTER TABLE invite_lookup ENABLE ROW LEVEL SECURITY;
ALTER TABLE invite_lookup FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON invite_lookup TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON invite_lookup TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON key_lookup, invite_lookup TO perpetuity_app;

-- CREATE OR REPLACE keeps the grants of 000009 and 000005.
CREATE OR REPLACE FUNCTION resolve_api_key(h bytea)
RETURNS TABLE (tenant_id bigint, key_id bigint, user_id bigint, user_name text, user_field_identity boolean, scope text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT k.tenant_id, k.id, k.user_id, u.name, t.user_field_identity, k.scope
    FROM key_lookup l
    JOIN api_keys k ON k.tenant_id = l.tenant_id AND k.id = l.key_id
    JOIN memory_users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
    JOIN tenants t ON t.id = k.tenant_id
    WHERE l.key_hash = h AND k.revoked_at IS NULL
$$;

CREATE OR REPLACE FUNCTION console_invite(hash bytea)
RETURNS TABLE (tenant_id bigint, id bigint, email text, role text, tenant_name text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT i.tenant_id, i.id, i.email, i.role, t.name
    FROM invite_lookup l
    JOIN console_invites i ON i.tenant_id = l.tenant_id AND i.id = l.invite_id
    JOIN tenants t ON t.id = i.tenant_id
    WHERE l.token_hash = hash AND i.accepted_at IS NULL AND i.expires_at > now()
$$;
