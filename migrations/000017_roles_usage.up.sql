-- Roles and usage (issue 18, items 3 and 4).
--
-- tenant_member becomes the role that manages keys and sees usage but reads
-- no memory content; tenant_reader keeps what tenant_member could do until
-- now (read every memory page, every view audited). Existing members and
-- pending member invitations become readers, so nobody gains key rights
-- or loses a page they could read.
ALTER TABLE console_accounts DROP CONSTRAINT console_accounts_role_check;
ALTER TABLE console_accounts ADD CONSTRAINT console_accounts_role_check
    CHECK (role IN ('platform_admin', 'tenant_admin', 'tenant_member', 'tenant_reader'));
ALTER TABLE console_invites DROP CONSTRAINT console_invites_role_check;
ALTER TABLE console_invites ADD CONSTRAINT console_invites_role_check
    CHECK (role IN ('tenant_admin', 'tenant_member', 'tenant_reader'));
UPDATE console_accounts SET role = 'tenant_reader' WHERE role = 'tenant_member';
UPDATE console_invites SET role = 'tenant_reader' WHERE role = 'tenant_member';

-- Which key a request came in with, for usage per key. Within the tenant
-- (the key must be the request's own tenant's); a key that goes (its memory
-- user purged) leaves its requests counted without it. Rows from before
-- this migration have none.
ALTER TABLE requests ADD COLUMN key_id bigint;
ALTER TABLE requests ADD CONSTRAINT requests_key_fk FOREIGN KEY (tenant_id, key_id)
    REFERENCES api_keys (tenant_id, id) ON DELETE SET NULL (key_id);
CREATE INDEX requests_key_at ON requests (tenant_id, key_id, at);
