-- The graph is derived data: dropping it loses nothing the items do not
-- hold, except which items a reply's request showed. Policies and grants
-- go with the tables.
DROP TABLE IF EXISTS reply_sources;
DROP TABLE IF EXISTS chain_heads;
DROP TABLE IF EXISTS chain_edges;
