package proxy

import "sync"

// A Responses request that continues a stored response
// (previous_response_id) sends only its new items: its first message is
// this turn's, so a hash of it made each turn a conversation of its own,
// and every session's "yes" one conversation where the second "yes", at
// the same position, was a retry that stored nothing. responseChains
// remembers, for each response this process relayed, the conversation it
// was stored in and the position its turn ended at, so that the request
// continuing it goes on in that conversation after it. A response this
// process did not relay (another replica's, one from before a restart)
// names a conversation of its own ("r:" and its id): split from its
// chain, never merged with another, and a retry of the same request still
// continues the same response.

// chainsMax bounds the map; past it the map starts over.
const chainsMax = 100_000

type responseChains struct {
	mu sync.Mutex
	m  map[chainKey]chainLink
}

type chainKey struct {
	tenant, user int64
	response     string
}

// chainLink is where a response's turn was stored: its conversation's key
// and the position after its reply.
type chainLink struct {
	conv string
	next int
}

func newResponseChains() *responseChains { return &responseChains{m: map[chainKey]chainLink{}} }

func (c *responseChains) get(k chainKey) (chainLink, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.m[k]
	return l, ok
}

func (c *responseChains) put(k chainKey, l chainLink) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= chainsMax {
		c.m = map[chainKey]chainLink{}
	}
	c.m[k] = l
}
