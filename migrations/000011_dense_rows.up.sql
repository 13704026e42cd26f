-- Dense retrieval rows (issue 16). A row of a dictionary version that
-- ships word vectors carries the SIF vector of the item's stored tokens
-- (memory/dict RawDense: a float32 scale and one int8 per dimension), NULL
-- for other versions and for items none of whose words has a vector. It is
-- derived from the tokens and the dictionary alone, like the terms.
ALTER TABLE retrieval_rows ADD COLUMN dense bytea;

-- The common direction SIF removes from every dense row of one tenant under
-- one version: the first principal component of the tenant's rows,
-- computed when the version finishes deriving and frozen from then on, so
-- every process scores the same. A tenant without a row here (one that
-- started on the version) uses the dictionary's own direction. Dims
-- float32, little-endian.
CREATE TABLE dense_components (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    dict_version integer NOT NULL REFERENCES dictionaries (version),
    component    bytea NOT NULL,
    rows_used    bigint NOT NULL CHECK (rows_used >= 0),
    computed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, dict_version)
);

-- Row-level security as on every tenant table (000005).
ALTER TABLE dense_components ENABLE ROW LEVEL SECURITY;
ALTER TABLE dense_components FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON dense_components TO perpetuity_app
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());
CREATE POLICY owner_all ON dense_components TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON dense_components TO perpetuity_app;
