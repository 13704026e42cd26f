-- Key lifecycle (issue 18, item 5). A key may carry an end (expires_at):
-- from that instant the proxy refuses it as expired, with its own 401, so
-- the agent's owner learns why rather than seeing "invalid". Rotation makes
-- a new key with the same name, scope and limits and gives the old one an
-- end a grace period away (rotated_at says the end came from a rotation,
-- for the keys table). A key's own limits (NULL: the tenant's, as every
-- key had before this step) override the tenant's per-key limits.
--
-- resolve_api_key is left as it is: expiry and limits are read in the
-- tenant after the key resolves (memory/store/keylife.go), so the key
-- lookup keeps one shape while it is being moved to a lookup table.
-- Nothing here is unique or a foreign key.
ALTER TABLE api_keys
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN rotated_at timestamptz,
    ADD COLUMN requests_per_minute integer CHECK (requests_per_minute >= 0),
    ADD COLUMN tokens_per_minute integer CHECK (tokens_per_minute >= 0),
    ADD COLUMN tokens_per_day bigint CHECK (tokens_per_day >= 0);
