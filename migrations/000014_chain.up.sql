-- The chain graph (issue 17): edges between stored items of one owner that
-- say "these belong to one thread", across conversations. One writer
-- (memory/chain/writer.go) derives them from the items in the tenant log's
-- order and appends them with its watermark in one transaction, so a crash
-- loses no edge and the writer resumes where it stopped. An edge goes from
-- the later item (src) to the earlier one it continues or drew on (dst).
CREATE TABLE chain_edges (
    tenant_id bigint NOT NULL,
    src_id    bigint NOT NULL,
    dst_id    bigint NOT NULL,
    -- thread: src continues dst (rare words in common, in another stretch
    -- of the owner's memory); evidence: src is a reply that drew on dst (a
    -- frame item or memory-tool result of its request, words in common).
    relation  text NOT NULL CHECK (relation IN ('thread', 'evidence')),
    user_id   bigint NOT NULL,
    weight    real NOT NULL CHECK (weight > 0),
    PRIMARY KEY (tenant_id, src_id, relation, dst_id),
    CHECK (dst_id < src_id),
    FOREIGN KEY (tenant_id, src_id) REFERENCES items (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, dst_id) REFERENCES items (tenant_id, id) ON DELETE CASCADE
);
-- What continues an item, or answered from it.
CREATE INDEX chain_edges_dst ON chain_edges (tenant_id, dst_id);
-- A purge removes its user's edges while it holds the tenant's head.
CREATE INDEX chain_edges_user ON chain_edges (tenant_id, user_id);

-- How far the writer has read the tenant log: every item with seq <= seq
-- has its edges written.
CREATE TABLE chain_heads (
    tenant_id bigint PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    seq       bigint NOT NULL DEFAULT 0 CHECK (seq >= 0)
);

-- What a captured reply's request showed the model: its frame and the
-- results of its memory tools. Written with the reply in its capture
-- transaction; the writer reads it to link the reply to what it drew on.
CREATE TABLE reply_sources (
    tenant_id  bigint NOT NULL,
    message_id bigint NOT NULL,
    item_ids   bigint[] NOT NULL,
    PRIMARY KEY (tenant_id, message_id),
    FOREIGN KEY (tenant_id, message_id) REFERENCES messages (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE chain_edges ENABLE ROW LEVEL SECURITY;
ALTER TABLE chain_edges FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON chain_edges TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON chain_edges TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON chain_edges TO perpetuity_app;

ALTER TABLE chain_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE chain_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON chain_heads TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON chain_heads TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON chain_heads TO perpetuity_app;

ALTER TABLE reply_sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE reply_sources FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON reply_sources TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON reply_sources TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON reply_sources TO perpetuity_app;
