-- Reverses 000009. The code before 000009 treats every key as tenant-wide,
-- so a pinned key left live would silently gain the reach it was denied.
-- Going down fails closed instead: every live pinned key is revoked (its
-- agents get a 401 and need a new key), tenant-wide keys keep working.
UPDATE api_keys SET revoked_at = now() WHERE scope = 'user' AND revoked_at IS NULL;

DROP FUNCTION resolve_api_key(bytea);
CREATE FUNCTION resolve_api_key(h bytea)
RETURNS TABLE (tenant_id bigint, key_id bigint, user_id bigint, user_name text, user_field_identity boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT k.tenant_id, k.id, k.user_id, u.name, t.user_field_identity
    FROM api_keys k
    JOIN memory_users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
    JOIN tenants t ON t.id = k.tenant_id
    WHERE k.key_hash = h AND k.revoked_at IS NULL
$$;
REVOKE EXECUTE ON FUNCTION resolve_api_key(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION resolve_api_key(bytea) TO perpetuity_app;

ALTER TABLE api_keys DROP COLUMN scope;
