-- Dropping the table drops its policies and grants with it.
DROP TABLE IF EXISTS tenant_limits;
