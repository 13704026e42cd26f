-- Dropping the table drops its policies and grants with it.
DROP TABLE IF EXISTS dense_components;
ALTER TABLE retrieval_rows DROP COLUMN IF EXISTS dense;
