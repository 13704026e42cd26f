-- Reverses 000018. The code before it knows no key ends, so a key with an
-- end left live would work for ever: going down fails closed, as 000009's
-- down does, and revokes every live key that has an end (expired, set to
-- expire, or rotated out and in its grace). Their replacements, and keys
-- without an end, keep working. Per-key limits go back to the tenant's.
UPDATE api_keys SET revoked_at = now() WHERE expires_at IS NOT NULL AND revoked_at IS NULL;

ALTER TABLE api_keys
    DROP COLUMN expires_at,
    DROP COLUMN rotated_at,
    DROP COLUMN requests_per_minute,
    DROP COLUMN tokens_per_minute,
    DROP COLUMN tokens_per_day;
