DROP INDEX IF EXISTS retrieval_rows_item;
