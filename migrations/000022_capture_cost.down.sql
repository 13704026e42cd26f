-- Code before 000022 reads the counts from term_stats and corpus_stats
-- alone: the rows not folded yet are added there first.
INSERT INTO term_stats (tenant_id, dict_version, term_id, df)
SELECT d.tenant_id, d.dict_version, t.term_id, sum(t.df)
FROM stat_deltas d, unnest(d.term_ids, d.dfs) AS t(term_id, df)
GROUP BY d.tenant_id, d.dict_version, t.term_id
ON CONFLICT (tenant_id, dict_version, term_id) DO UPDATE SET df = term_stats.df + EXCLUDED.df;
INSERT INTO corpus_stats (tenant_id, dict_version, items, total_length)
SELECT tenant_id, dict_version, sum(items), sum(total_length) FROM stat_deltas
GROUP BY tenant_id, dict_version
ON CONFLICT (tenant_id, dict_version) DO UPDATE
SET items = corpus_stats.items + EXCLUDED.items, total_length = corpus_stats.total_length + EXCLUDED.total_length;
DROP TABLE stat_deltas;

-- The per-item check at commit, as 000003 made it.
DROP FUNCTION dict_version_missing(bigint, integer);
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
