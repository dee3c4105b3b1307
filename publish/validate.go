package publish

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/itemformat"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
)

// ValidateOptions says what Validate checks besides names and sizes.
type ValidateOptions struct {
	// AllowEmpty accepts a set with no items.
	AllowEmpty bool
	// Syntax parses items by extension: .json as JSON, .yaml/.yml as YAML
	// (every document), .toml as TOML, with the parser and limits of the
	// agents' template helpers (nesting at most 100 levels, no duplicate
	// YAML keys), so an item that passes is one every agent can read.
	Syntax bool
	// MaxItemSize bounds each item; 0 means ItemLimit. Larger values are
	// capped at ItemLimit: a znode cannot hold more.
	MaxItemSize int64
	// MaxSetSize bounds the set's total size; 0 means DefaultMaxSetSize.
	MaxSetSize int64
}

// Validate checks a set before anything is written: every name can be an
// item path (manifest.ValidatePath) and no path is also the directory of
// another (manifest.TreeConflicts), every item fits a znode, the total fits the
// set limit, the set is not empty (unless AllowEmpty) and, with Syntax,
// every JSON/YAML/TOML item parses. It reports every problem at once, as a
// *multierror.Error whose entries each name their item and match
// ErrInvalidInput (size problems are *TooLargeError). Messages never quote
// item content: parse errors give a line and column only.
func Validate(items map[string][]byte, opts ValidateOptions) error {
	errs := validateItems(items, opts)
	if len(errs) == 0 && len(items) > 0 {
		// Publish checks this exactly for its root; here with generous
		// path and publisher lengths.
		l := layout.New("/"+strings.Repeat("r", 63), "/"+strings.Repeat("m", 63))
		if err := manifestProblem(sizedEntries(items), strings.Repeat("p", 64), 0, "", l, zk.WorldACL(zk.PermAll), DefaultMultiBudget); err != nil {
			errs = append(errs, err)
		}
	}
	return errlist.Join(errs...)
}

// validateItems is Validate without the manifest size check: names, item
// and set sizes, emptiness, syntax.
func validateItems(items map[string][]byte, opts ValidateOptions) []error {
	itemLimit := opts.MaxItemSize
	if itemLimit <= 0 || itemLimit > ItemLimit {
		itemLimit = ItemLimit
	}
	setLimit := opts.MaxSetSize
	if setLimit <= 0 {
		setLimit = DefaultMaxSetSize
	}
	var errs []error
	if len(items) == 0 && !opts.AllowEmpty {
		errs = append(errs, &InputError{Err: errors.New("the set is empty (no items); an empty set is only published when explicitly allowed (AllowEmpty, --allow-empty)")})
	}
	var total int64
	for _, name := range slices.Sorted(maps.Keys(items)) {
		data := items[name]
		total += int64(len(data))
		if err := manifest.ValidatePath(name); err != nil {
			errs = append(errs, &InputError{Err: fmt.Errorf("bad item name: %w", err)})
			continue
		}
		if int64(len(data)) > itemLimit {
			errs = append(errs, &TooLargeError{What: "item", Item: name, Size: int64(len(data)), Limit: itemLimit,
				Hint: "split it into smaller items"})
			continue
		}
		if opts.Syntax {
			if err := checkSyntax(name, data); err != nil {
				errs = append(errs, &InputError{Item: name, Err: err})
			}
		}
	}
	for _, c := range manifest.TreeConflicts(items) {
		errs = append(errs, &InputError{Err: c})
	}
	if total > setLimit {
		errs = append(errs, &TooLargeError{What: "set", Size: total, Limit: setLimit})
	}
	return errs
}

// setWithin reports whether items total at most limit bytes (0:
// DefaultMaxSetSize), as validateItems checks them.
func setWithin(items map[string][]byte, limit int64) bool {
	if limit <= 0 {
		limit = DefaultMaxSetSize
	}
	var total int64
	for _, d := range items {
		if total += int64(len(d)); total > limit {
			return false
		}
	}
	return true
}

// hashItems returns the manifest entry of every item: the one place a
// publish hashes its set.
func hashItems(items map[string][]byte) map[string]manifest.Item {
	out := make(map[string]manifest.Item, len(items))
	for n, d := range items {
		out[n] = manifest.ItemOf(d)
	}
	return out
}

// sizedEntries returns, for Validate's size check of the manifest, an
// entry of every item with its size and, in place of its SHA-256, a
// placeholder of the same length that is equal for equal contents and
// different otherwise. The check needs no more: an entry's encoded size
// does not depend on its digest's value, and the final commit carries a
// Check per distinct content. Equal contents are found with a fast
// non-cryptographic hash, confirmed byte by byte, so the set is hashed
// once per publish, by Publish (hashItems), not twice (confpush
// validates before it publishes: at 20 items of 64 KiB one SHA-256 of
// the set is ~1.5 ms of CPU, docs/bench/latency-push64-2026-11-27c).
func sizedEntries(items map[string][]byte) map[string]manifest.Item {
	type bucket struct {
		size int
		sum  uint64
	}
	seed := maphash.MakeSeed()
	distinct := map[bucket][]int{} // indexes in reps of the contents seen
	var reps [][]byte
	out := make(map[string]manifest.Item, len(items))
	for n, d := range items {
		b := bucket{len(d), maphash.Bytes(seed, d)}
		id := -1
		for _, r := range distinct[b] {
			if bytes.Equal(reps[r], d) {
				id = r
				break
			}
		}
		if id < 0 {
			id = len(reps)
			reps = append(reps, d)
			distinct[b] = append(distinct[b], id)
		}
		out[n] = manifest.Item{SHA256: fmt.Sprintf("%064x", id), Size: int64(len(d))}
	}
	return out
}

// manifestProblem reports a manifest too large for one znode, or for the
// marker-mode final commit that carries it twice with a Check per blob.
// hashed is the set's manifest entries (hashItems).
func manifestProblem(hashed map[string]manifest.Item, publisher string, rollbackOf int64, message string, l layout.Paths, acl []zk.ACL, budget int) error {
	m := worstCase(hashed, publisher, rollbackOf, message)
	size := encodedSize(m)
	hint := "publish fewer items (or shorter names)"
	if size > ItemLimit {
		return &TooLargeError{What: "manifest", Size: int64(size), Limit: ItemLimit, Hint: hint}
	}
	// The final commit: the root's data, the marker's delete, the history
	// entry (the manifest twice) and a Check per distinct blob.
	total := frameOverhead + 2*size +
		opSize(&zk.SetDataRequest{Path: l.Root}) +
		opSize(&zk.DeleteRequest{Path: l.Marker()}) +
		opSize(&zk.CreateRequest{Path: l.HistoryNode(m.Generation), Acl: acl})
	seen := map[string]bool{}
	for _, it := range m.Items {
		if !seen[it.SHA256] {
			seen[it.SHA256] = true
			total += opSize(&zk.CheckVersionRequest{Path: l.Blob(it.SHA256)})
		}
	}
	if total > budget {
		return &TooLargeError{What: "manifest", Size: int64(total), Limit: int64(budget), Hint: hint}
	}
	return nil
}

// worstCase is the largest manifest a publish of hashed can commit: the
// longest generation, ids and rollback field, marker mode, and the longest
// timestamp a commit writes (UTC, nine fractional digits): time.Now()
// would encode one to nine digits, so the size would depend on the clock.
func worstCase(hashed map[string]manifest.Item, publisher string, rollbackOf int64, message string) *manifest.Manifest {
	return &manifest.Manifest{
		Format: manifest.FormatFor(hashed), Generation: 1 << 62, PublishID: strings.Repeat("f", 32),
		PublishedAt: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), Publisher: publisher, Mode: manifest.ModeMarker,
		RollbackOf: max(rollbackOf, 1<<62), Incarnation: strings.Repeat("f", 32), Message: message, Items: hashed,
	}
}

// checkSyntax parses data by the extension of name, as the agents'
// template helpers would (internal/itemformat: same limits, same
// positions). YAML is checked in every document.
func checkSyntax(name string, data []byte) error {
	f, ok := itemformat.ForName(name)
	if !ok {
		return nil
	}
	return itemformat.Check(f, data)
}

// MaxMessageLen bounds Request.Message, in bytes.
const MaxMessageLen = 1024

// ValidateMessage checks a publish message: at most MaxMessageLen bytes of
// valid UTF-8 and no control characters (a newline or escape sequence in
// it would forge lines or colours in history and logs). The error matches
// ErrInvalidInput and does not quote the message.
func ValidateMessage(msg string) error {
	var problem string
	switch {
	case len(msg) > MaxMessageLen:
		problem = fmt.Sprintf("%d bytes, more than the %d-byte limit", len(msg), MaxMessageLen)
	case !utf8.ValidString(msg):
		problem = "not valid UTF-8"
	default:
		pos := 0
		for _, r := range msg {
			pos++
			if unicode.IsControl(r) {
				problem = fmt.Sprintf("character %d is the control character %U: give one line of text (no newline, tab or escape sequence)", pos, r)
				break
			}
		}
	}
	if problem == "" {
		return nil
	}
	return &InputError{Err: fmt.Errorf("message: %s", problem)}
}
