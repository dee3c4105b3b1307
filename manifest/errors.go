package manifest

import (
	"errors"
	"fmt"
)

// ErrTorn means that what a reader read does not match the manifest it
// read with it: an item is missing or its hash differs
// (*ItemMismatchError), or a canary's candidate is not the one the root
// announces (cache.CandidateError). A publish landing while the reader
// reads gives it for a moment; an item changed behind the publisher's back
// (a raw ZooKeeper write) gives it until the next publish rewrites the
// item. Readers retry and never answer with what they read meanwhile.
var ErrTorn = errors.New("items do not match the manifest")

// ItemMismatchError names a live item that is missing or does not match
// the manifest read with it: a publish is landing, or the item was changed
// outside zkconf (a raw ZooKeeper write), which lasts until the next
// publish of the set rewrites it. It matches ErrTorn and never carries the
// item's content. The publisher and the cache wrap it with what they do
// about it.
type ItemMismatchError struct {
	// Root is the config root ("" when the reader follows one root only,
	// as a cache does: its messages name the item alone).
	Root string
	// Item is the first item found missing or different.
	Item string
	// Generation is the manifest's generation.
	Generation int64
	// Missing is true when the item's node does not exist.
	Missing bool
}

// Error names the item, the root and the generation.
func (e *ItemMismatchError) Error() string {
	of := ""
	if e.Root != "" {
		of = " of " + e.Root
	}
	what := "does not match"
	if e.Missing {
		what = "is missing from the root but is in"
	}
	return fmt.Sprintf("item %q%s %s the manifest of generation %d", e.Item, of, what, e.Generation)
}

// Is makes an *ItemMismatchError match ErrTorn.
func (e *ItemMismatchError) Is(target error) bool { return target == ErrTorn }
