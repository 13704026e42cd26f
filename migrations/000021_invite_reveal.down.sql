-- An invitation link waiting for its page is dropped (the invitation
-- itself stays: its link was shown, or it expires unused).
DELETE FROM console_reveals WHERE kind = 'invite';
ALTER TABLE console_reveals DROP CONSTRAINT console_reveals_kind_check;
ALTER TABLE console_reveals ADD CONSTRAINT console_reveals_kind_check
    CHECK (kind IN ('welcome', 'key', 'reset'));
