-- Distributes Perpetuity's schema on Citus (issue 21, item 5). Run it once
-- on the coordinator, as the owner of the schema, after `perpetuity
-- migrate up` and after the workers are added (README, "Scaling out"):
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f deploy/citus/distribute.sql
--
-- Every table of the schema is in exactly one of the three lists below, and
-- migrations/citus_test.go reads them from this file: it fails on a table
-- in none, and on any primary key, unique constraint, unique index or
-- foreign key that Citus could not keep with the table placed as listed.
-- A migration adding a table adds it here.
--
-- Not run in this repository's tests: the environment has no Citus. The
-- calls follow the Citus 12 documentation.

-- Reference tables: small, shared, copied to every node; tenant tables
-- reference them.
SELECT create_reference_table(t)
FROM unnest(ARRAY['tenants', 'dictionaries', 'dictionary_entries']) AS t;

-- Coordinator tables: looked up before any tenant is known (a key or an
-- invitation by its hash, a session by its token, an account by its
-- address, the sign-in throttle), or holding rows of no tenant (platform
-- admins, platform audit events). They stay on the coordinator as Citus
-- local tables, which may reference the reference tables.
SELECT citus_add_local_table_to_metadata(t)
FROM unnest(ARRAY['key_lookup', 'invite_lookup', 'console_accounts', 'console_sessions',
                  'console_password_resets', 'console_reveals', 'console_throttle',
                  'audit_log']) AS t;

-- Tenant tables, distributed by tenant_id and colocated: all of one
-- tenant's rows live on one node, and each tenant's capture and frame are
-- single-node transactions.
SELECT create_distributed_table('tenant_heads', 'tenant_id');
SELECT create_distributed_table(t, 'tenant_id', colocate_with => 'tenant_heads')
FROM unnest(ARRAY['memory_users', 'api_keys', 'conversations', 'messages', 'items',
                  'retrieval_rows', 'term_stats', 'corpus_stats', 'stat_deltas', 'activations', 'reheats',
                  'tenant_log', 'requests', 'dict_rollouts', 'item_births',
                  'integrity_reports', 'integrity_violations', 'console_invites',
                  'tenant_limits', 'bindings', 'dense_components',
                  'key_user_creations', 'chain_edges', 'chain_heads', 'arena_segments',
                  'reply_sources', 'request_inspections', 'request_inspection_items']) AS t;
