-- Redaction of one item (issue 18): the turn that should never have been
-- stored (a pasted secret) is removed with everything keyed by it, and a
-- 'redact' event in the tenant log tells every serving process's arena,
-- item cache and chain writer to let it go, as a purge does for a user.
-- The event names the item and its owner, never its content.
ALTER TABLE tenant_log ADD COLUMN item_id bigint;
ALTER TABLE tenant_log DROP CONSTRAINT tenant_log_kind_check;
ALTER TABLE tenant_log ADD CONSTRAINT tenant_log_kind_check CHECK (kind IN ('purge', 'flip', 'redact'));
ALTER TABLE tenant_log ADD CONSTRAINT tenant_log_redact_item
    CHECK ((kind = 'redact') = (item_id IS NOT NULL) AND (kind <> 'redact' OR user_id IS NOT NULL));
