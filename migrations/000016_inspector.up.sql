-- The request inspector (issue 18): what the provider received for a
-- proxied request and what came back, so that an admin can answer "why did
-- the model not know X?". One record per inspected request, beside its
-- figures in requests and written in the same statement. It holds memory
-- content (the frame, tool results, the reply), never a key; it goes with
-- its user's purge and after PERPETUITY_INSPECT_RETENTION (pruned on write).
CREATE TABLE request_inspections (
    tenant_id  bigint NOT NULL,
    request_id bigint NOT NULL,
    user_id    bigint NOT NULL,
    at         timestamptz NOT NULL,
    -- memory/store/inspect.go Inspection, as JSON: read whole, one page.
    record     jsonb NOT NULL,
    PRIMARY KEY (tenant_id, request_id),
    FOREIGN KEY (tenant_id, request_id) REFERENCES requests (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX request_inspections_user ON request_inspections (tenant_id, user_id, at);
CREATE INDEX request_inspections_at ON request_inspections (tenant_id, at);

-- Which records an item was in (shown) or left out of: the memory
-- browser's "frames this item was in", and the purge of a record that
-- shows another user's item. No foreign key to items: a record outlives
-- nothing it names, the purge takes both.
CREATE TABLE request_inspection_items (
    tenant_id  bigint NOT NULL,
    item_id    bigint NOT NULL,
    request_id bigint NOT NULL,
    shown      boolean NOT NULL,
    PRIMARY KEY (tenant_id, item_id, request_id),
    FOREIGN KEY (tenant_id, request_id) REFERENCES request_inspections (tenant_id, request_id) ON DELETE CASCADE
);
CREATE INDEX request_inspection_items_request ON request_inspection_items (tenant_id, request_id);

-- The console's request list filters by memory user.
CREATE INDEX requests_user_at ON requests (tenant_id, user_id, at);

ALTER TABLE request_inspections ENABLE ROW LEVEL SECURITY;
ALTER TABLE request_inspections FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON request_inspections TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON request_inspections TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON request_inspections TO perpetuity_app;

ALTER TABLE request_inspection_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE request_inspection_items FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON request_inspection_items TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON request_inspection_items TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON request_inspection_items TO perpetuity_app;
