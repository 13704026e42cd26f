-- A capture's cost at the database (issue 20 §2): what every turn's
-- transaction wrote beyond its message, items, retrieval rows and birth
-- activation.
--
-- Frequency counts. A capture added one to the document frequency of each
-- of its ~40 terms (term_stats) and to its version's corpus counts
-- (corpus_stats) with an upsert per row: two fifths of the transaction's
-- time at the server (a tuple lock and an update, each WAL-logged, per
-- term). It now appends one row per dictionary version instead, the
-- message's counts, in the same transaction: a message is still stored
-- whole with its counts or not at all. The counts of a tenant are
-- term_stats and corpus_stats plus the rows here; a fold
-- (memory/store/stats.go) moves rows into the two tables off the request's
-- path, one addition per term for many messages at once. The row goes with
-- its message (a purge, a redaction, the tenant's removal).
CREATE TABLE stat_deltas (
    tenant_id    bigint NOT NULL,
    message_id   bigint NOT NULL,
    dict_version integer NOT NULL,
    -- What the message's rows of this version add to corpus_stats.
    items        integer NOT NULL,
    total_length bigint NOT NULL,
    -- What they add to term_stats: dfs[i] to the df of term_ids[i].
    term_ids     integer[] NOT NULL,
    dfs          integer[] NOT NULL,
    PRIMARY KEY (tenant_id, message_id, dict_version),
    FOREIGN KEY (tenant_id, message_id) REFERENCES messages (tenant_id, id) ON DELETE CASCADE,
    CHECK (cardinality(term_ids) = cardinality(dfs))
);

ALTER TABLE stat_deltas ENABLE ROW LEVEL SECURITY;
ALTER TABLE stat_deltas FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON stat_deltas TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON stat_deltas TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON stat_deltas TO perpetuity_app;

-- Dictionary versions. The deferred per-item trigger of 000003 ran a
-- PL/pgSQL function and two lookups per stored item at every commit. The
-- guarantee it kept (an item stored with retrieval rows has one for every
-- version its tenant keeps, checked under the head row lock so that a
-- derivation started or a flip landed meanwhile fails the capture, which
-- retries with fresh versions) is now checked once per capture, by the
-- only writer of items (memory/store/capture.go): after the capture has
-- taken the head row lock, one statement compares the versions its rows
-- cover with the ones the tenant keeps, and this function fails the
-- transaction with the trigger's error when one is missing. It is called
-- only then. Items stored with no row at all are still left to the
-- integrity check.
DROP TRIGGER items_rows_per_version ON items;
DROP FUNCTION check_item_versions();
CREATE FUNCTION dict_version_missing(tenant bigint, version integer) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a capture of tenant % has no retrieval row for dictionary version %', tenant, version
        USING ERRCODE = 'PPDV1',
              HINT = 'the tenant''s dictionary versions changed: derive rows for each and retry';
END $$;
