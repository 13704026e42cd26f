DROP TABLE IF EXISTS integrity_violations;
DROP TABLE IF EXISTS integrity_reports;
DROP TRIGGER IF EXISTS items_birth ON items;
DROP FUNCTION IF EXISTS record_item_births();
DROP TABLE IF EXISTS item_births;
DROP TRIGGER IF EXISTS items_rows_per_version ON items;
DROP FUNCTION IF EXISTS check_item_versions();
DROP TABLE IF EXISTS dict_rollouts;
