-- Dropping the table drops its policies and grants with it.
DROP TABLE IF EXISTS key_user_creations;
