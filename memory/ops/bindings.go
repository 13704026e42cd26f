package ops

import (
	"context"
	"fmt"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Binding log invariants (issue 17): every label a frame could render
// (a user's name, a stored speaker, a conversation's title) resolves
// through a binding; the labels the console lists are the latest
// binding; a conversation's bindings name its owner.
const (
	InvBindingUnbound = "binding.unbound"
	InvBindingStale   = "binding.stale"
	InvBindingOwner   = "binding.owner"
)

const maxBindingFaults = 10_000

func (k *checkRun) checkBindings(ctx context.Context, r *store.IntegrityReader) error {
	fs, err := r.BindingFaults(ctx, maxBindingFaults)
	if err != nil {
		return err
	}
	for _, f := range fs {
		inv := map[string]string{"unbound": InvBindingUnbound, "stale": InvBindingStale, "owner": InvBindingOwner}[f.Problem]
		detail := fmt.Sprintf("%s label of memory user %d", f.Kind, f.UserID)
		if f.ConversationID != nil {
			detail = fmt.Sprintf("%s label of conversation %d (memory user %d)", f.Kind, *f.ConversationID, f.UserID)
		}
		k.add(inv, nil, detail+": "+f.Problem, map[string]any{"kind": f.Kind, "user_id": f.UserID, "conversation_id": f.ConversationID})
	}
	return nil
}
