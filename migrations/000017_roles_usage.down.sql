-- Readers go back to tenant_member, which before this migration is the
-- read-only content role: they keep exactly what they had. Members made
-- after it (keys and usage, no content) would read content under the
-- older console, which has no role without it: they are disabled instead
-- (fail closed, as 000009's down revokes what it cannot express), and
-- their pending invitations go.
UPDATE console_accounts SET disabled_at = now() WHERE role = 'tenant_member' AND disabled_at IS NULL;
DELETE FROM console_invites WHERE role = 'tenant_member';
UPDATE console_accounts SET role = 'tenant_member' WHERE role = 'tenant_reader';
UPDATE console_invites SET role = 'tenant_member' WHERE role = 'tenant_reader';
ALTER TABLE console_invites DROP CONSTRAINT console_invites_role_check;
ALTER TABLE console_invites ADD CONSTRAINT console_invites_role_check
    CHECK (role IN ('tenant_admin', 'tenant_member'));
ALTER TABLE console_accounts DROP CONSTRAINT console_accounts_role_check;
ALTER TABLE console_accounts ADD CONSTRAINT console_accounts_role_check
    CHECK (role IN ('platform_admin', 'tenant_admin', 'tenant_member'));

DROP INDEX IF EXISTS requests_key_at;
ALTER TABLE requests DROP CONSTRAINT IF EXISTS requests_key_fk;
ALTER TABLE requests DROP COLUMN IF EXISTS key_id;
