-- A frame's render reads the texts of ~10 scattered items a turn that its
-- process does not hold. Each item's row was joined with its message's
-- for the one field it lacked, whether the reply was cut short: a second
-- index probe and heap page per item. Where the tables do not fit in
-- memory, each is a read from disk (~0.1 ms apiece on the bench machine),
-- half of that read's time. A message's flag is set when it is stored and
-- never changes, so its items keep a copy.
ALTER TABLE items ADD COLUMN interrupted boolean NOT NULL DEFAULT false;

UPDATE items i SET interrupted = true
FROM messages m
WHERE m.tenant_id = i.tenant_id AND m.id = i.message_id AND m.interrupted;
