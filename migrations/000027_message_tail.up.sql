-- A request that sends only its newest message (a client naming its
-- conversation with X-Perpetuity-Conversation, a Responses request on a
-- stored conversation) is placed after the conversation's newest message,
-- unless it repeats a recent question of the conversation: capture reads
-- the conversation's tail through this index, by role, so a conversation
-- of any length costs it a few index pages. Built without blocking the
-- captures of a running fleet (the statement stands alone in its file, so
-- it runs outside a transaction).
CREATE INDEX CONCURRENTLY messages_conversation_tail ON messages (tenant_id, conversation_id, role, position, id);
