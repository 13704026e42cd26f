-- A frame reads the asking user's turns of a day or month its question
-- names (memory/when.go); the included columns let it read them from the
-- index alone.
CREATE INDEX items_born ON items (tenant_id, user_id, born_at) INCLUDE (id, token_count);
