-- New tenants start on the binary's default dictionary (issue 16: v3),
-- which the application passes in, having loaded it first if it was
-- missing. Without an explicit choice the head starts on the newer of that
-- default and the version most tenants serve, so a global flip to a later
-- uploaded version still carries new tenants with it, while tenants kept on
-- an older version (a one-tenant trial, a flip back) no longer pull new
-- tenants down to it. An explicit choice (exact) starts the head there.
-- Existing heads are not touched: every tenant keeps its version.
DROP FUNCTION IF EXISTS create_tenant(text);

CREATE FUNCTION create_tenant(tenant_name text, start_version integer, exact boolean) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    head_version integer := start_version;
    most_served  integer;
    new_id       bigint;
BEGIN
    IF NOT exact THEN
        SELECT hh.dict_version INTO most_served FROM tenant_heads hh GROUP BY hh.dict_version
            ORDER BY count(*) DESC, hh.dict_version DESC LIMIT 1;
        head_version := GREATEST(start_version, coalesce(most_served, start_version));
    END IF;
    -- A tenant on a version the database does not hold could neither
    -- capture nor be served; nothing is stored.
    IF NOT EXISTS (SELECT 1 FROM dictionaries d WHERE d.version = head_version) THEN
        RAISE EXCEPTION 'dictionary version % is not loaded', head_version
            USING ERRCODE = 'PPDV2', HINT = 'load it first: perpetuity dict upload';
    END IF;
    INSERT INTO tenants (name) VALUES (tenant_name) RETURNING id INTO new_id;
    INSERT INTO tenant_heads (tenant_id, dict_version) VALUES (new_id, head_version);
    RETURN new_id;
END $$;

-- Runs as the owner: for the application only (see 000005).
REVOKE EXECUTE ON FUNCTION create_tenant(text, integer, boolean) FROM PUBLIC;
