-- Per-key request and token limits, set per tenant (issue 9, item 12). Every
-- key of the tenant gets these limits on its own; 0 means unlimited. A tenant
-- without a row gets the service defaults (PERPETUITY_KEY_RPM,
-- PERPETUITY_KEY_TPM). The proxy counts in each process, so with N replicas
-- a key may get up to N times these figures.
CREATE TABLE tenant_limits (
    tenant_id           bigint PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    requests_per_minute integer NOT NULL DEFAULT 0 CHECK (requests_per_minute >= 0),
    tokens_per_minute   integer NOT NULL DEFAULT 0 CHECK (tokens_per_minute >= 0),
    tokens_per_day      bigint NOT NULL DEFAULT 0 CHECK (tokens_per_day >= 0),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- Row-level security as on every tenant table (000005): the application's
-- role sees only the tenant its transaction set; the owner (migrations,
-- operator commands) sees all.
ALTER TABLE tenant_limits ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_limits FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_limits TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON tenant_limits TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_limits TO perpetuity_app;
