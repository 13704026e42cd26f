ALTER TABLE items DROP COLUMN interrupted;
