-- Back to the unique hashes on the tenant tables. A key or invitation
-- written since the up has its lookup row, and its hash is unique by the
-- lookup's primary key, so the constraints come back without conflict.
CREATE OR REPLACE FUNCTION resolve_api_key(h bytea)
RETURNS TABLE (tenant_id bigint, key_id bigint, user_id bigint, user_name text, user_field_identity boolean, scope text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT k.tenant_id, k.id, k.user_id, u.name, t.user_field_identity, k.scope
    FROM api_keys k
    JOIN memory_users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
    JOIN tenants t ON t.id = k.tenant_id
    WHERE k.key_hash = h AND k.revoked_at IS NULL
$$;

CREATE OR REPLACE FUNCTION console_invite(hash bytea)
RETURNS TABLE (tenant_id bigint, id bigint, email text, role text, tenant_name text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT i.tenant_id, i.id, i.email, i.role, t.name
    FROM console_invites i JOIN tenants t ON t.id = i.tenant_id
    WHERE i.token_hash = hash AND i.accepted_at IS NULL AND i.expires_at > now()
$$;

-- An inviter id the up let through with no account behind it is forgotten,
-- as the foreign key's ON DELETE SET NULL would have.
UPDATE console_invites i SET invited_by = NULL
WHERE invited_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM console_accounts a WHERE a.id = i.invited_by);
ALTER TABLE console_invites ADD CONSTRAINT console_invites_invited_by_fkey
    FOREIGN KEY (invited_by) REFERENCES console_accounts (id) ON DELETE SET NULL;
ALTER TABLE console_invites ADD CONSTRAINT console_invites_token_hash_key UNIQUE (token_hash);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);

DROP TABLE invite_lookup;
DROP TABLE key_lookup;
