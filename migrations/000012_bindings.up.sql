-- The binding log (issue 17): how names and identities are bound, append
-- only. One writer (memory/store/bindings.go) appends a row whenever a
-- memory user's display name, a speaker's label or a conversation's title
-- is set, and the first time a harness identity hint (OpenAI "user",
-- Anthropic metadata.user_id, a harness session id) is seen with a memory
-- user and conversation. A frame's labels resolve through the latest row
-- of their subject when it is rendered, so a rename shows on the next
-- request and no frame is ever rewritten.
CREATE TABLE bindings (
    tenant_id       bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id              bigint GENERATED ALWAYS AS IDENTITY,
    -- user: display name of user_id; speaker: label of the stored speaker
    -- "subject" in user_id's memory; title: of conversation_id; hint: the
    -- hint "subject" (its field or header) with value "value" was bound to
    -- user_id and conversation_id.
    kind            text NOT NULL CHECK (kind IN ('user', 'speaker', 'title', 'hint')),
    user_id         bigint NOT NULL,
    conversation_id bigint,
    subject         text NOT NULL DEFAULT '',
    value           text NOT NULL,
    -- Who bound it: created, capture, import, console, migration, purge.
    source          text NOT NULL,
    bound_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CHECK ((kind IN ('title', 'hint')) = (conversation_id IS NOT NULL)),
    FOREIGN KEY (tenant_id, user_id) REFERENCES memory_users (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, conversation_id) REFERENCES conversations (tenant_id, id) ON DELETE CASCADE
);
-- The latest binding of a subject is one index probe at render time.
CREATE INDEX bindings_user_subject ON bindings (tenant_id, user_id, kind, subject, id DESC);
CREATE INDEX bindings_conversation ON bindings (tenant_id, conversation_id, kind, id DESC) WHERE conversation_id IS NOT NULL;

-- What was bound before the log existed, so every label resolves.
INSERT INTO bindings (tenant_id, kind, user_id, value, source, bound_at)
SELECT tenant_id, 'user', id, display_name, 'migration', created_at FROM memory_users;
INSERT INTO bindings (tenant_id, kind, user_id, conversation_id, value, source, bound_at)
SELECT tenant_id, 'title', user_id, id, title, 'migration', created_at FROM conversations;
INSERT INTO bindings (tenant_id, kind, user_id, subject, value, source, bound_at)
SELECT tenant_id, 'speaker', user_id, speaker, speaker, 'migration', min(stored_at)
FROM messages WHERE speaker <> '' GROUP BY tenant_id, user_id, speaker;

-- Row-level security as on every tenant table (000005). The service may
-- append and (purge, tenant removal) delete, never change a row.
ALTER TABLE bindings ENABLE ROW LEVEL SECURITY;
ALTER TABLE bindings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON bindings TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON bindings TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON bindings TO perpetuity_app;
