-- Memory operations (DESIGN §8): dictionary rollouts per tenant, the birth
-- record that proves decay constants unchanged, and integrity reports.

-- A dictionary version a tenant keeps retrieval rows for besides its active
-- one (tenant_heads.dict_version): one being derived, one derived and ready
-- to flip to, or the previous active version kept for a flip back. Capture
-- writes rows for the active version and every version listed here. Rows
-- change only under the tenant's head row lock, which orders them against
-- captures, purges and flips.
CREATE TABLE dict_rollouts (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    dict_version integer NOT NULL REFERENCES dictionaries (version),
    state        text NOT NULL CHECK (state IN ('deriving', 'ready')),
    -- Every item with id <= derived_upto has its row for this version; the
    -- derivation resumes after it.
    derived_upto bigint NOT NULL DEFAULT 0,
    -- The largest item id and the item count when derivation started: items
    -- stored later get their rows at capture.
    target       bigint NOT NULL DEFAULT 0,
    total        bigint NOT NULL DEFAULT 0,
    derived      bigint NOT NULL DEFAULT 0,
    -- The worker deriving now, while its lease lasts.
    lease_owner  text,
    lease_until  timestamptz,
    started_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    PRIMARY KEY (tenant_id, dict_version)
);

-- An item that has retrieval rows must have one for every version its
-- tenant keeps. Checked at commit, under the head row lock the capture
-- holds, so a capture that computed its rows before a derivation started or
-- a flip landed fails (SQLSTATE PPDV1) and is retried with fresh versions,
-- instead of committing an item the new version would never see. Items
-- stored without any row are left to the integrity check.
CREATE FUNCTION check_item_versions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM retrieval_rows r WHERE r.tenant_id = NEW.tenant_id AND r.item_id = NEW.id) THEN
        RETURN NULL;
    END IF;
    SELECT m.v INTO missing FROM (
        SELECT h.dict_version AS v FROM tenant_heads h WHERE h.tenant_id = NEW.tenant_id
        UNION
        SELECT d.dict_version FROM dict_rollouts d WHERE d.tenant_id = NEW.tenant_id) m
    WHERE NOT EXISTS (SELECT 1 FROM retrieval_rows r
        WHERE r.tenant_id = NEW.tenant_id AND r.dict_version = m.v AND r.item_id = NEW.id)
    ORDER BY m.v LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'item % of tenant % has no retrieval row for dictionary version %', NEW.id, NEW.tenant_id, missing
            USING ERRCODE = 'PPDV1',
                  HINT = 'the tenant''s dictionary versions changed: derive rows for each and retry';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER items_rows_per_version AFTER INSERT ON items
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_item_versions();

-- What an item was born with. Decay constant, novelty and birth clock are
-- written once; the integrity check compares the item against this copy,
-- taken by the database in the inserting transaction whoever inserts.
CREATE TABLE item_births (
    tenant_id  bigint NOT NULL,
    item_id    bigint NOT NULL,
    born_clock bigint NOT NULL,
    tau        double precision NOT NULL,
    novelty    real NOT NULL,
    PRIMARY KEY (tenant_id, item_id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id) ON DELETE CASCADE
);
CREATE FUNCTION record_item_births() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO item_births (tenant_id, item_id, born_clock, tau, novelty)
    SELECT b.tenant_id, b.id, b.born_clock, b.tau, b.novelty FROM born b;
    RETURN NULL;
END $$;
CREATE TRIGGER items_birth AFTER INSERT ON items
    REFERENCING NEW TABLE AS born FOR EACH STATEMENT EXECUTE FUNCTION record_item_births();
-- Items stored before this migration: their values now are all there is.
INSERT INTO item_births (tenant_id, item_id, born_clock, tau, novelty)
SELECT tenant_id, id, born_clock, tau, novelty FROM items;

-- One run of the integrity check over one tenant. finished_at is NULL while
-- it runs (or if the process running it died).
CREATE TABLE integrity_reports (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    actor_email  text NOT NULL DEFAULT '',
    dict_version integer,
    head_seq     bigint,
    items        bigint NOT NULL DEFAULT 0,
    violations   bigint NOT NULL DEFAULT 0,
    -- Violations per invariant, and what was not checked and why.
    counts       jsonb NOT NULL DEFAULT '{}',
    notes        text NOT NULL DEFAULT '',
    error        text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX integrity_reports_recent ON integrity_reports (tenant_id, id DESC);

-- The violations of a report, with the rows involved as ids and numbers
-- (never content).
CREATE TABLE integrity_violations (
    tenant_id bigint NOT NULL,
    report_id bigint NOT NULL,
    n         integer NOT NULL,
    invariant text NOT NULL,
    item_id   bigint,
    detail    text NOT NULL,
    rows      jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (tenant_id, report_id, n),
    FOREIGN KEY (tenant_id, report_id) REFERENCES integrity_reports (tenant_id, id) ON DELETE CASCADE
);
