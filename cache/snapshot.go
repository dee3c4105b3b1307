package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zkconf/zkconf/manifest"
)

// Snapshot is one published generation of a config root, complete and
// verified: every item's size and sha256 matched the generation's manifest.
// A Snapshot never changes after it is handed out and is safe for concurrent
// use; reading it never blocks the cache.
type Snapshot struct {
	// m is the generation's manifest without its Items map (nil): the
	// entries are names and items' metas. A cache builds a snapshot at
	// every publish and needs no lookup by name; Manifest builds the map.
	m    *manifest.Manifest
	zxid int64
	// names are m's item names, sorted (shared with the snapshots that
	// have the same set, never modified), and items their entries, in
	// the same order. Slices, not maps: a cache builds a snapshot at every
	// publish, and a fleet of caches in one process (confbench) spends its
	// CPU on hashing names and on cold map buckets otherwise.
	names     []string
	items     []entry
	persisted bool
	// left: incarnations held before and left (IncarnationFollow), with
	// the newest generation held in each; persisted with the snapshot.
	left []IncarnationMark
	// timings: how the cache fetched it (set before it is handed out).
	timings FetchTimings
	// read: when the root read it comes from was sent and answered, on
	// a Group's clock (zero outside a Group, and from the state file).
	read witness
	// durable is the write of its state (nil: nothing to wait for, no
	// state file or loaded from it). Set before the snapshot is handed
	// out; the write it stands for may still be running then
	// (WithDurableBarrier).
	durable *durability
}

// ErrNotPersisted is what Snapshot.Durable returns (wrapped, with the
// write's and the removal's errors) when the cache could neither write
// the snapshot's state nor remove the older state it replaces: a restart
// could start from a generation older than this one, so nothing may show
// it.
var ErrNotPersisted = errors.New("cache: the snapshot's state could not be written nor the older state removed (a restart could start from an older generation)")

// durability is the write of one snapshot's state: done is closed when it
// ended, err (set before) is nil when a restart can no longer start from
// an older generation, and persist is how long the write took.
type durability struct {
	done    chan struct{}
	err     error
	persist time.Duration
}

func newDurability() *durability { return &durability{done: make(chan struct{})} }

// finish records the write's outcome and releases every waiter.
func (d *durability) finish(err error, took time.Duration) {
	d.err, d.persist = err, took
	close(d.done)
}

// Durable waits until the cache's state file (WithStateFile) holds s or a
// newer generation of the same root, durably, or the older state was
// removed after a failed write (a restart then waits for ZooKeeper): from
// then on, no restart starts from a generation older than s. It returns at
// once for a snapshot handed out after its write (the default) or without
// a state file. A consumer of a cache with WithDurableBarrier calls it
// before any effect of s becomes visible; an error (ErrNotPersisted, or
// ctx's) means it must not show s. The write itself is the cache's and
// goes on when ctx ends.
func (s *Snapshot) Durable(ctx context.Context) error {
	if s == nil || s.durable == nil {
		return nil
	}
	select {
	case <-s.durable.done:
		return s.durable.err
	default:
	}
	select {
	case <-s.durable.done:
		return s.durable.err
	case <-ctx.Done():
		return fmt.Errorf("cache: waiting for generation %d's state to be durable: %w", s.Generation(), ctx.Err())
	}
}

// entry is one item of a snapshot: its manifest entry and its content.
type entry struct {
	meta manifest.Item
	data []byte
}

// newSnapshot builds a snapshot. items must hold exactly m's items, each
// already verified against m; the snapshot takes ownership of items and
// of m's strings (m itself is left as it is).
func newSnapshot(m *manifest.Manifest, zxid int64, items map[string][]byte, persisted bool) *Snapshot {
	names := m.Names()
	entries := make([]entry, len(names))
	for i, name := range names {
		entries[i] = entry{meta: m.Items[name], data: items[name]}
	}
	hdr := *m
	hdr.Items = nil // the entries hold them (Snapshot.m)
	return &Snapshot{m: &hdr, zxid: zxid, names: names, items: entries, persisted: persisted}
}

// index returns the position of item name in s.names and s.items.
func (s *Snapshot) index(name string) (int, bool) {
	return slices.BinarySearch(s.names, name)
}

// Generation is the published generation number (1, 2, ...).
func (s *Snapshot) Generation() int64 { return s.m.Generation }

// Zxid is the zxid of the transaction that committed this generation (the
// root znode's Mzxid). Within one ensemble it grows with every publish, so it
// can serve as a fencing token for work derived from this configuration.
func (s *Snapshot) Zxid() int64 { return s.zxid }

// PublishID is the publish attempt's random id recorded in the manifest.
func (s *Snapshot) PublishID() string { return s.m.PublishID }

// PublishedAt is the publisher's clock when it committed the generation.
func (s *Snapshot) PublishedAt() time.Time { return s.m.PublishedAt }

// Candidate reports whether the snapshot is a canary rollout's candidate
// generation (WithLabels) rather than the root's stable one.
func (s *Snapshot) Candidate() bool { return s.m.Candidate != nil }

// FromStateFile reports whether the snapshot was loaded from the state file
// (WithStateFile) rather than read from ZooKeeper by this process.
func (s *Snapshot) FromStateFile() bool { return s.persisted }

// Manifest returns a copy of the generation's manifest.
func (s *Snapshot) Manifest() *manifest.Manifest {
	c := *s.m
	c.Items = make(map[string]manifest.Item, len(s.names))
	for i, name := range s.names {
		c.Items[name] = s.items[i].meta
	}
	return &c
}

// Get returns item name's content. The slice is shared with the snapshot and
// every other reader: it must not be modified.
func (s *Snapshot) Get(name string) ([]byte, bool) {
	i, ok := s.index(name)
	if !ok {
		return nil, false
	}
	return s.items[i].data, true
}

// Names returns the item names in sorted order (a fresh slice).
func (s *Snapshot) Names() []string { return slices.Clone(s.names) }

// Len is the number of items.
func (s *Snapshot) Len() int { return len(s.names) }

// supersededBy reports whether a root read at (gen, zxid) is newer than s:
// both the generation and the commit zxid must have grown. Within one
// ensemble every publish grows both; anything else (a lagging server, a
// different ensemble, a state file from elsewhere) is refused.
func (s *Snapshot) supersededBy(gen, zxid int64) bool {
	return gen > s.m.Generation && zxid > s.zxid
}

// same reports whether a root read of manifest m names s's generation.
func (s *Snapshot) same(m *manifest.Manifest) bool {
	return m.Generation == s.m.Generation && m.PublishID == s.m.PublishID
}
