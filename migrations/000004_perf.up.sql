-- The per-item version check at commit, purges and integrity look retrieval
-- rows up by item; the primary key leads with the dictionary version.
CREATE INDEX retrieval_rows_item ON retrieval_rows (tenant_id, item_id);
