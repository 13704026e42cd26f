-- An invitation link is a one-time reveal too: the invite form redirects to
-- a page that shows the link once, so a reload of that page neither makes a
-- second invitation nor shows the link again.
ALTER TABLE console_reveals DROP CONSTRAINT console_reveals_kind_check;
ALTER TABLE console_reveals ADD CONSTRAINT console_reveals_kind_check
    CHECK (kind IN ('welcome', 'key', 'reset', 'invite'));
