-- A console a team admin trusts (issue 18): secrets shown once on the page
-- a form redirects to, and password reset links.

-- A secret (a new API key, a password reset link) waiting to be shown once
-- on the page its form redirects to, so that reloading that page neither
-- repeats the form nor shows the secret again. It is sealed with a key
-- derived from the cookie token of the session that made it, which the
-- database never holds (sessions keep only its SHA-256): the row is
-- useless without that browser. The first view takes the sealed value
-- away; the row stays without it until it expires, so that a later view
-- can say the secret was shown. It goes with its session.
CREATE TABLE console_reveals (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    session_hash bytea NOT NULL REFERENCES console_sessions (token_hash) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('welcome', 'key', 'reset')),
    -- What the page says beside the secret (a key's name, memory user,
    -- public prefix; the account a link resets), never the secret.
    about        jsonb NOT NULL DEFAULT '{}',
    sealed       bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    shown_at     timestamptz,
    PRIMARY KEY (tenant_id, id),
    CHECK ((sealed IS NULL) = (shown_at IS NOT NULL))
);
CREATE INDEX console_reveals_session ON console_reveals (session_hash);
CREATE INDEX console_reveals_expires ON console_reveals (tenant_id, expires_at);

ALTER TABLE console_reveals ENABLE ROW LEVEL SECURITY;
ALTER TABLE console_reveals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console_reveals TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON console_reveals TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON console_reveals TO perpetuity_app;

-- Password reset links. With no mail configured, a platform admin (in the
-- console) or the operator (perpetuity admin reset-link) issues one and
-- hands it over. The link carries a random token; only its SHA-256 is
-- kept. A link works once, until it expires, and only the newest of an
-- account's links works. Like sign-in, the reset page comes before any
-- tenant is known, so links are read and used through the functions below.
CREATE TABLE console_password_resets (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES console_accounts (id) ON DELETE CASCADE,
    -- The account's tenant; NULL for a platform admin's account.
    tenant_id  bigint REFERENCES tenants (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    issued_by  text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX console_password_resets_account ON console_password_resets (account_id);

ALTER TABLE console_password_resets ENABLE ROW LEVEL SECURITY;
ALTER TABLE console_password_resets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console_password_resets TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON console_password_resets TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON console_password_resets TO perpetuity_app;

-- Issues a link for the enabled account with this (lower-cased) address,
-- voiding its earlier unused ones. No row when there is no such account.
CREATE FUNCTION console_reset_issue(addr text, hash bytea, ttl_secs double precision, by_whom text)
RETURNS TABLE (account_id bigint, tenant_id bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DELETE FROM console_password_resets r USING console_accounts a
    WHERE r.account_id = a.id AND lower(a.email) = addr AND r.used_at IS NULL;
    INSERT INTO console_password_resets (account_id, tenant_id, token_hash, issued_by, expires_at)
    SELECT a.id, a.tenant_id, hash, by_whom, now() + make_interval(secs => ttl_secs)
    FROM console_accounts a WHERE lower(a.email) = addr AND a.disabled_at IS NULL
    RETURNING console_password_resets.account_id, coalesce(console_password_resets.tenant_id, 0)
$$;

-- The account a live link resets.
CREATE FUNCTION console_reset_pending(hash bytea)
RETURNS TABLE (account_id bigint, tenant_id bigint, email text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT a.id, coalesce(a.tenant_id, 0), a.email
    FROM console_password_resets r JOIN console_accounts a ON a.id = r.account_id
    WHERE r.token_hash = hash AND r.used_at IS NULL AND r.expires_at > now() AND a.disabled_at IS NULL
$$;

-- Uses a live link: the account's password becomes pw_hash, the link is
-- spent, and the account's sessions and other links are gone, all at once.
-- No row when the link is not live.
CREATE FUNCTION console_reset_use(hash bytea, pw_hash text)
RETURNS TABLE (account_id bigint, tenant_id bigint, email text, sessions_ended bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH spent AS (
        UPDATE console_password_resets r SET used_at = now()
        FROM console_accounts a
        WHERE r.token_hash = hash AND r.used_at IS NULL AND r.expires_at > now()
          AND a.id = r.account_id AND a.disabled_at IS NULL
        RETURNING r.account_id
    ), acct AS (
        UPDATE console_accounts a SET password_hash = pw_hash FROM spent WHERE a.id = spent.account_id
        RETURNING a.id, coalesce(a.tenant_id, 0) AS tenant, a.email
    ), ended AS (
        DELETE FROM console_sessions s USING spent WHERE s.account_id = spent.account_id RETURNING 1
    ), voided AS (
        -- Not the link being spent: one statement may change a row once.
        DELETE FROM console_password_resets o USING spent
        WHERE o.account_id = spent.account_id AND o.used_at IS NULL AND o.token_hash <> hash
    )
    SELECT acct.id, acct.tenant, acct.email, (SELECT count(*) FROM ended) FROM acct
$$;

REVOKE EXECUTE ON FUNCTION console_reset_issue(text, bytea, double precision, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_reset_pending(bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION console_reset_use(bytea, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION console_reset_issue(text, bytea, double precision, text) TO perpetuity_app;
GRANT EXECUTE ON FUNCTION console_reset_pending(bytea) TO perpetuity_app;
GRANT EXECUTE ON FUNCTION console_reset_use(bytea, text) TO perpetuity_app;
