-- The request inspector's item index, cut to what only an index row can
-- answer. A frame shows its asker's own memory, so nearly every item a
-- record names belongs to the record's own user: a purge of that user, or
-- a redaction of one of their items, takes all of their records by user
-- anyway (purge.go, redact.go), and only the memory browser's "frames this
-- item was in" needs to find them by item. For that, the record now
-- carries its items as two arrays beside it, read through the user's own
-- records (request_inspections_user), and the index rows are written only
-- for an item of another user, which the purge and redaction of that user
-- must find by item, or one whose owner the frame did not read. A record
-- the size of a 250k-item tenant's frame cost the database backend about
-- half the CPU after (BenchmarkRecordRequest/inspected-250k). The
-- backfill rewrites every record row under this migration's lock: records
-- written meanwhile wait (and a write that outwaits its timeout is lost,
-- logged), once, for a table of at most the retention's records.
ALTER TABLE request_inspections
    ADD COLUMN item_ids bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN item_shown boolean[] NOT NULL DEFAULT '{}';

UPDATE request_inspections p SET item_ids = x.ids, item_shown = x.shown
FROM (SELECT tenant_id, request_id, array_agg(item_id ORDER BY item_id) AS ids, array_agg(shown ORDER BY item_id) AS shown
      FROM request_inspection_items GROUP BY tenant_id, request_id) x
WHERE x.tenant_id = p.tenant_id AND x.request_id = p.request_id;

-- Rows of the record's own user's items are now in its arrays; an item
-- gone (purged, redacted) takes its records, so a row naming one is kept
-- as it was.
DELETE FROM request_inspection_items x
USING request_inspections p, items i
WHERE p.tenant_id = x.tenant_id AND p.request_id = x.request_id
  AND i.tenant_id = x.tenant_id AND i.id = x.item_id AND i.user_id = p.user_id;
