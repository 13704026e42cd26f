-- Every item of a record gets its index row again, its own user's too.
INSERT INTO request_inspection_items (tenant_id, item_id, request_id, shown)
SELECT p.tenant_id, u.item_id, p.request_id, u.shown
FROM request_inspections p, unnest(p.item_ids, p.item_shown) AS u(item_id, shown)
ON CONFLICT (tenant_id, item_id, request_id) DO NOTHING;

ALTER TABLE request_inspections DROP COLUMN item_ids, DROP COLUMN item_shown;
