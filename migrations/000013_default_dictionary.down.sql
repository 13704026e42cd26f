-- Reverses 000013: tenant creation goes back to 000005's function, whose
-- head starts on the version most tenants serve (v1 in a new database).
-- Heads keep the versions they have.
DROP FUNCTION IF EXISTS create_tenant(text, integer, boolean);

CREATE FUNCTION create_tenant(tenant_name text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH t AS (INSERT INTO tenants (name) VALUES (tenant_name) RETURNING tenants.id),
    h AS (INSERT INTO tenant_heads (tenant_id, dict_version)
        SELECT t.id, COALESCE((SELECT hh.dict_version FROM tenant_heads hh GROUP BY hh.dict_version
            ORDER BY count(*) DESC, hh.dict_version DESC LIMIT 1), 1)
        FROM t)
    SELECT t.id FROM t
$$;

REVOKE EXECUTE ON FUNCTION create_tenant(text) FROM PUBLIC;
