package zkclient

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// lazyHosts is a zk.HostProvider that hands out the servers as configured
// ("host:port", not resolved), so the client's dialer resolves the name at
// every connection attempt: a name that does not resolve fails that one
// attempt (and the next round tries it again) instead of failing
// zk.Connect, and a name whose address changed is followed (Config.LazyResolve).
// Its round-robin is the default provider's: shuffled once, and retryStart
// once every server was tried since the last connection.
type lazyHosts struct {
	mu         sync.Mutex
	servers    []string
	curr, last int
}

// Init takes the servers in a random order, as the default provider does,
// so that a fleet spreads over the ensemble.
func (h *lazyHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = slices.Clone(servers)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

// Len is the number of servers.
func (h *lazyHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server; retryStart is true once every server was
// tried since the last connection (the client then pauses a second).
func (h *lazyHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

// Connected records that the current server gave a connection.
func (h *lazyHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
