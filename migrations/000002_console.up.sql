-- Console: accounts of people who sign in (not memory users), their
-- server-side sessions, invitations, the audit log and the sign-in throttle.
-- Accounts, sessions and the throttle are looked up before any tenant is
-- known (sign-in by email, session by cookie), like api_keys; a platform
-- admin's account and session belong to no tenant (tenant_id NULL).

CREATE TABLE console_accounts (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- NULL exactly for platform admins, who act in every tenant.
    tenant_id       bigint REFERENCES tenants (id) ON DELETE CASCADE,
    email           text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    -- argon2id, PHC string format (parameters and salt inside).
    password_hash   text NOT NULL,
    role            text NOT NULL CHECK (role IN ('platform_admin', 'tenant_admin', 'tenant_member')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_sign_in_at timestamptz,
    disabled_at     timestamptz,
    CHECK ((role = 'platform_admin') = (tenant_id IS NULL))
);
-- One account per address across the service: sign-in asks for no tenant.
CREATE UNIQUE INDEX console_accounts_email ON console_accounts (lower(email));
CREATE INDEX console_accounts_tenant ON console_accounts (tenant_id, id);

-- A session is a random token held by the browser; only its SHA-256 is
-- stored, so a database reader cannot sign in as anyone.
CREATE TABLE console_sessions (
    token_hash   bytea PRIMARY KEY,
    account_id   bigint NOT NULL REFERENCES console_accounts (id) ON DELETE CASCADE,
    -- The tenant the session acts in: the account's own, or the one a
    -- platform admin entered (NULL until then, and again if that tenant is
    -- deleted; a tenant account's sessions go with the account).
    tenant_id    bigint REFERENCES tenants (id) ON DELETE SET NULL,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sessions_account ON console_sessions (account_id);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- Invitations a tenant admin sends; the link carries a token shown once.
CREATE TABLE console_invites (
    tenant_id   bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    email       text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    role        text NOT NULL CHECK (role IN ('tenant_admin', 'tenant_member')),
    token_hash  bytea NOT NULL UNIQUE,
    invited_by  bigint REFERENCES console_accounts (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- Who did what and when: sign-ins, key changes, role changes, purges, flips.
-- Never content, never secrets. tenant_id NULL marks platform-level events.
CREATE TABLE audit_log (
    tenant_id   bigint REFERENCES tenants (id) ON DELETE CASCADE,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor_id    bigint,
    actor_email text NOT NULL DEFAULT '',
    action      text NOT NULL,
    target      text NOT NULL DEFAULT '',
    detail      jsonb NOT NULL DEFAULT '{}',
    address     text NOT NULL DEFAULT '',
    PRIMARY KEY (id)
);
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, id DESC);

-- Failed sign-ins (and sign-ups) per scope ("account:<email>",
-- "address:<ip>", "signup:<ip>") in a sliding window. Kept in the database
-- so that every serving process behind a load balancer counts the same.
CREATE TABLE console_throttle (
    scope text NOT NULL,
    at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_throttle_scope ON console_throttle (scope, at);
CREATE INDEX console_throttle_at ON console_throttle (at);
