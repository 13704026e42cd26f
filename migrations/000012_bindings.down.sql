-- The labels stay in memory_users.display_name and conversations.title,
-- which the binding writer kept current; dropping the table drops its
-- policies and grants with it.
DROP TABLE IF EXISTS bindings;
