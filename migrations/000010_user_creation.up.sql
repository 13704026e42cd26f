-- New memory users each key created per UTC day (issue 15, finding 12):
-- X-Perpetuity-User (or a user field that is the identity, or an import
-- line's "user") creates a user on first sight, so a key could make any
-- number of them. The proxy refuses a key's creations past
-- PERPETUITY_KEY_USERS_PER_DAY. A count, not a scan of memory_users: a
-- purged user still counted the day it was made, and concurrent creations
-- serialize on the key's row. Rows of past days are dropped as the key
-- writes its next one.
CREATE TABLE key_user_creations (
    tenant_id bigint NOT NULL,
    key_id    bigint NOT NULL,
    day       date NOT NULL,
    created   integer NOT NULL CHECK (created >= 0),
    PRIMARY KEY (tenant_id, key_id, day),
    FOREIGN KEY (tenant_id, key_id) REFERENCES api_keys (tenant_id, id) ON DELETE CASCADE
);

-- Row-level security as on every tenant table (000005).
ALTER TABLE key_user_creations ENABLE ROW LEVEL SECURITY;
ALTER TABLE key_user_creations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON key_user_creations TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON key_user_creations TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON key_user_creations TO perpetuity_app;
