-- The inspector's record is kept as text, not json. The server writes it
-- with encoding/json and reads it whole in Go; nothing in SQL looks inside
-- it (its question has its own column, 000024). As json, PostgreSQL
-- parsed every record on its way in to validate it: a record of a
-- 250k-item frame is tens of kB, written after every proxied request
-- beside the next request's work (BenchmarkRecordRequest, README
-- "Performance").
ALTER TABLE request_inspections ALTER COLUMN record TYPE text USING record::text;
