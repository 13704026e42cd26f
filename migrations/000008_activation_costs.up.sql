-- A frame's warm read needs each activation's decay constant and token
-- count. Joining items for them fetched hundreds of scattered item rows per
-- turn (8 ms of a 250k-item tenant's turn, against 0.3 ms for the
-- activations alone). Both are fixed at the item's birth, so the activation
-- carries copies. NULL (rows written by older code) falls back to the item.
ALTER TABLE activations ADD COLUMN tau double precision, ADD COLUMN token_count integer;

UPDATE activations a SET tau = i.tau, token_count = i.token_count
FROM items i WHERE i.tenant_id = a.tenant_id AND i.id = a.item_id;
