-- The inspector's records are a window of recent requests: dropping them
-- loses only that window. Policies and grants go with the tables.
DROP INDEX IF EXISTS requests_user_at;
DROP TABLE IF EXISTS request_inspection_items;
DROP TABLE IF EXISTS request_inspections;
