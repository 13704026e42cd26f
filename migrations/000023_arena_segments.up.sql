-- Arena segments (issue 20 §2, cold start). A process that loads a tenant
-- from scratch read every item joined with its retrieval row, a million
-- index probes and a sort at 1M items: four fifths of a cold start. A
-- segment is a run of those rows as the cold load reads them (the items
-- with first_seq < seq <= last_seq and their rows of dict_version),
-- encoded into one value (memory/store/segment.go), so that a later cold
-- load reads a few hundred values in order instead, and only the items
-- past the last segment row by row.
--
-- Segments are derived and disposable: a purge or a redaction removes every
-- segment of its tenant in its own transaction (what they encode is the
-- erased memory's term ids and vectors), a retired version's go with its
-- rows, and the integrity check compares each with the rows it stands for.
-- They are written in the background after a cold load, contiguous from
-- seq 0, by memory/segments.go.
CREATE TABLE arena_segments (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    dict_version integer NOT NULL,
    first_seq    bigint NOT NULL,
    last_seq     bigint NOT NULL,
    -- The tenant head of the read the segment was cut from.
    as_of        bigint NOT NULL,
    items        integer NOT NULL,
    payload      bytea NOT NULL,
    PRIMARY KEY (tenant_id, dict_version, first_seq),
    CHECK (first_seq >= 0 AND last_seq > first_seq AND as_of >= last_seq AND items > 0)
);
-- Read whole and in order; compression would cost a cold load more CPU
-- than the bytes it saves (varints and quantized vectors compress little).
ALTER TABLE arena_segments ALTER COLUMN payload SET STORAGE EXTERNAL;

ALTER TABLE arena_segments ENABLE ROW LEVEL SECURITY;
ALTER TABLE arena_segments FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON arena_segments TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON arena_segments TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON arena_segments TO perpetuity_app;
