-- Key scope (issue 15, item 114). A key pinned to its memory user ('user')
-- may only act as that user: X-Perpetuity-User may repeat it, and import
-- lines may name only it. A tenant-wide key ('tenant') may name any memory
-- user of the tenant, which is how every key behaved before this step.
-- Existing keys stay tenant-wide, so a running deployment's agents keep
-- working; keys created from now on are pinned unless an admin chooses
-- otherwise (the column's default is what the code relies on only for rows
-- it does not write itself).
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'tenant' CHECK (scope IN ('user', 'tenant'));
ALTER TABLE api_keys ALTER COLUMN scope SET DEFAULT 'user';

-- Key resolution hands the scope to the proxy. The returned row type
-- changes, so the function is replaced, with 000005's privileges restated:
-- the application role only, no other role of the database.
DROP FUNCTION resolve_api_key(bytea);
CREATE FUNCTION resolve_api_key(h bytea)
RETURNS TABLE (tenant_id bigint, key_id bigint, user_id bigint, user_name text, user_field_identity boolean, scope text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT k.tenant_id, k.id, k.user_id, u.name, t.user_field_identity, k.scope
    FROM api_keys k
    JOIN memory_users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
    JOIN tenants t ON t.id = k.tenant_id
    WHERE k.key_hash = h AND k.revoked_at IS NULL
$$;
REVOKE EXECUTE ON FUNCTION resolve_api_key(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION resolve_api_key(bytea) TO perpetuity_app;
