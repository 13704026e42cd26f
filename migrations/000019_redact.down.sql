-- Going back forgets the redaction events (code before 000019 would read
-- one as nothing it knows); the items they removed stay removed, and every
-- arena loaded afterwards loads without them. The watermark stays gap-free:
-- a log position without a row is one at which nothing else committed.
DELETE FROM tenant_log WHERE kind = 'redact';
ALTER TABLE tenant_log DROP CONSTRAINT tenant_log_redact_item;
ALTER TABLE tenant_log DROP CONSTRAINT tenant_log_kind_check;
ALTER TABLE tenant_log ADD CONSTRAINT tenant_log_kind_check CHECK (kind IN ('purge', 'flip'));
ALTER TABLE tenant_log DROP COLUMN item_id;
