// Package manifest defines the manifest: the JSON document in a config
// root's data that names one generation of the config set and the sha256 of
// every item in it. A reader that holds a manifest can check that every item
// it read belongs to exactly that generation, which is how zkconf never hands
// out a torn set.
package manifest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// FormatVersion is the manifest format of a set whose item paths are all
// flat: what every zkconf writes for such a set, and all that zkconf
// before config trees reads. A set with any path holding "/" needs
// FormatTree (FormatFor); MaxFormat is the highest format this code
// reads.
const FormatVersion = 1

// MarkerName is the reserved child of a root that exists while a marker-mode
// publish is in progress. No item may have this name.
const MarkerName = "invalid"

// Mode is how a generation is committed: in one transaction (ModeMulti)
// or with the marker protocol (ModeMarker), as a manifest records it. A
// publish request may also ask for ModeAuto (multi when the transaction
// fits, marker otherwise); a manifest never records it.
type Mode string

// The modes.
const (
	ModeAuto   Mode = ""
	ModeMulti  Mode = "multi"
	ModeMarker Mode = "marker"
)

// String returns "auto", "multi" or "marker".
func (m Mode) String() string {
	if m == ModeAuto {
		return "auto"
	}
	return string(m)
}

// ParseMode parses "auto" (or ""), "multi" or "marker", in any case.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return ModeAuto, nil
	case "multi":
		return ModeMulti, nil
	case "marker":
		return ModeMarker, nil
	}
	return ModeAuto, fmt.Errorf("unknown mode %q (want auto, multi or marker)", s)
}

// Manifest describes one published generation of a config set.
type Manifest struct {
	// Format is the manifest format version: FormatVersion for a set of
	// flat names, FormatTree when any item path has a "/" (FormatFor).
	Format int `json:"format"`
	// Generation numbers publishes of this root: 1, 2, 3, ...
	Generation int64 `json:"generation"`
	// PublishID is a fresh random id per publish attempt; a publisher that
	// lost its connection mid-commit finds out whether it landed by looking
	// for it.
	PublishID string `json:"publish_id"`
	// PublishedAt is the publisher's clock when it committed.
	PublishedAt time.Time `json:"published_at"`
	// Publisher is user@host of whoever published.
	Publisher string `json:"publisher"`
	// Mode is ModeMulti or ModeMarker.
	Mode Mode `json:"mode"`
	// RollbackOf is the generation whose content this one republished, when
	// it was made by a rollback.
	RollbackOf int64 `json:"rollback_of,omitempty"`
	// Incarnation identifies the root's history: a random id (32 hex
	// digits, NewIncarnation) created with the first generation of a root
	// that has no manifest and no history, and carried by every later
	// generation, rollbacks included. A ZooKeeper wiped or rebuilt and
	// published again starts a new incarnation, whose generations and zxids
	// start over: readers compare generations only within an incarnation.
	// Empty in manifests written before incarnations existed (legacy).
	Incarnation string `json:"incarnation,omitempty"`
	// Message is the publisher's note on who and why ("" for none). It
	// is optional and informational: a reader written before it existed
	// ignores it (encoding/json skips unknown fields, and the canonical
	// fast path declines and falls back to encoding/json), so adding it
	// kept FormatVersion 1. Publishers bound it (publish.ValidateMessage);
	// Decode does not, so that a long note never makes a manifest unreadable.
	Message string `json:"message,omitempty"`
	// Items maps every item path to its hash and size.
	Items map[string]Item `json:"items"`

	// Canary rollouts (docs/design.md, "Canary rollouts"). Like Message,
	// these fields are optional and kept FormatVersion 1: a reader written
	// before them ignores them, so an older agent follows the stable
	// generation during a rollout and the live one after it.
	//
	// Canary, in a root's data only, announces a rollout in progress: this
	// manifest is the stable generation and Canary names the candidate.
	Canary *Canary `json:"canary,omitempty"`
	// Candidate, in a candidate's manifest (the candidate node's data and
	// its history entry), is the selection it was published for.
	Candidate *Selection `json:"candidate,omitempty"`
	// PromoteOf and AbortOf are the candidate generation a rollout's end
	// concerned: a promote publishes the candidate's content, an abort the
	// stable content, each as a new generation above the candidate's, so
	// that no host ever goes backwards.
	PromoteOf int64 `json:"promote_of,omitempty"`
	AbortOf   int64 `json:"abort_of,omitempty"`
}

// Item is one item's entry in a manifest.
type Item struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Errors returned by Decode; callers branch on them.
var (
	// ErrEmpty means the root exists but has never been published.
	ErrEmpty = errors.New("root holds no manifest (never published)")
	// ErrForeign means the root's data is not a zkconf manifest.
	ErrForeign = errors.New("root data is not a zkconf manifest")
	// ErrFutureFormat means the manifest was written by a newer zkconf.
	ErrFutureFormat = errors.New("manifest format is newer than this zkconf understands")
)

// NewIncarnation returns a fresh random incarnation id (128 bits, hex).
func NewIncarnation() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("manifest: no randomness: %v", err)) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// ValidIncarnation reports whether s is an incarnation id: 32 lower-case hex
// digits.
func ValidIncarnation(s string) bool {
	if len(s) != 32 {
		return false
	}
	var bad byte
	for i := 0; i < len(s); i++ {
		bad |= notLowerHex[s[i]]
	}
	return bad == 0
}

// Hash returns the hex sha256 of data, the form manifests record.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ItemOf returns the manifest entry describing data.
func ItemOf(data []byte) Item { return Item{SHA256: Hash(data), Size: int64(len(data))} }

// Names returns the item paths in sorted order (byte order: the items of
// a directory are contiguous).
func (m *Manifest) Names() []string { return slices.Sorted(maps.Keys(m.Items)) }

// Matches reports whether data is the content the manifest records for name.
func (m *Manifest) Matches(name string, data []byte) bool {
	it, ok := m.Items[name]
	return ok && it.Matches(data)
}

// Matches reports whether data is the content the entry describes (its
// size and sha256). The zero Item matches nothing. A reader that holds the
// entry already (a cache, after the read) verifies with it instead of
// looking the name up in the manifest again.
func (it Item) Matches(data []byte) bool {
	if it.Size != int64(len(data)) || len(it.SHA256) != 2*sha256.Size {
		return false
	}
	// Hash's form without its string: a cache verifies every item it
	// reads, and the comparison needs no copy.
	sum := sha256.Sum256(data)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:]) == it.SHA256
}

// SameContent reports whether two manifests describe the same item set.
func (m *Manifest) SameContent(o *Manifest) bool {
	return maps.Equal(m.Items, o.Items)
}

// TotalSize is the sum of all item sizes.
func (m *Manifest) TotalSize() int64 {
	var n int64
	for _, it := range m.Items {
		n += it.Size
	}
	return n
}

// Encode returns the manifest's JSON: encoding/json's encoding of m.
func (m *Manifest) Encode() []byte {
	if b, ok := encodeCanonical(m); ok {
		return b
	}
	b, err := json.Marshal(m)
	if err != nil {
		// Only plain strings, numbers and a time: cannot fail.
		panic(fmt.Sprintf("manifest: encode: %v", err))
	}
	return b
}

// Decode parses a root's data. Empty data gives ErrEmpty; data that is not a
// zkconf manifest gives ErrForeign; a newer format gives ErrFutureFormat.
// Every field is validated: a manifest that decodes is safe to act on.
func Decode(data []byte) (*Manifest, error) {
	// The common case, the exact form Encode writes, without reflection.
	if m, ok := decodeCanonical(data); ok {
		return m, nil
	}
	return decodeJSON(data)
}

// DecodeOwned is Decode for a caller that hands data over: the manifest's
// strings may share data's memory instead of a copy of it, so data must
// never be modified afterwards (the buffer a ZooKeeper read returned, say).
// A cache decodes its root at every publish; the copy was a third of the
// bytes it allocated per publish.
func DecodeOwned(data []byte) (*Manifest, error) {
	if len(data) > 0 {
		// #nosec G103 -- the caller hands data over (this function's contract); its one caller passes the buffer go-zookeeper allocated for that read alone.
		if m, ok := decodeCanonicalIn(data, unsafe.String(&data[0], len(data)), nil); ok {
			return m, nil
		}
	}
	return decodeJSON(data)
}

// DecodeOwnedSorted is DecodeOwned for a reader that walks the items in
// name order and needs no lookup by name (a cache, at every publish): the
// returned manifest's Items is nil, and names (increasing) and items (in
// the same order) are its entries instead. It accepts, rejects and
// returns exactly what DecodeOwned does otherwise (FuzzDecodeOwnedSorted
// checks that); a caller that needs the map builds it with WithItems.
// Building the map was a third of a cache's decode at every publish, and
// its lookups most of the reuse of the held items after it.
func DecodeOwnedSorted(data []byte) (m *Manifest, names []string, items []Item, err error) {
	if len(data) > 0 {
		var list entryList
		// #nosec G103 -- the caller hands data over (this function's contract), as with DecodeOwned.
		if m, ok := decodeCanonicalIn(data, unsafe.String(&data[0], len(data)), &list); ok {
			return m, list.names, list.items, nil
		}
	}
	// Any other form (format 2, or not Encode's exact form): the map,
	// then the lists from it.
	m, err = DecodeOwned(data)
	if err != nil {
		return nil, nil, nil, err
	}
	names = m.Names()
	items = make([]Item, len(names))
	for i, name := range names {
		items[i] = m.Items[name]
	}
	m.Items = nil
	return m, names, items, nil
}

// WithItems returns a copy of m whose Items map holds names[i] → items[i]
// (DecodeOwnedSorted's lists).
func WithItems(m *Manifest, names []string, items []Item) *Manifest {
	c := *m
	c.Items = make(map[string]Item, len(names))
	for i, name := range names {
		c.Items[name] = items[i]
	}
	return &c
}

// decodeJSON is Decode with encoding/json, for any input.
func decodeJSON(data []byte) (*Manifest, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrEmpty
	}
	// The common case in one pass (every cache decodes the root on every
	// notification); anything unusual goes through the probe below so the
	// error classes stay exact.
	var fast struct {
		Format *int `json:"format"`
		Manifest
	}
	if json.Unmarshal(data, &fast) == nil && fast.Format != nil && (*fast.Format == FormatVersion || *fast.Format == FormatTree) {
		m := fast.Manifest
		m.Format = *fast.Format
		if err := m.validate(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrForeign, err)
		}
		return &m, nil
	}
	var probe struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &probe); err != nil || probe.Format == nil {
		return nil, ErrForeign
	}
	if *probe.Format > MaxFormat {
		return nil, fmt.Errorf("%w (format %d, this zkconf reads up to %d): upgrade zkconf", ErrFutureFormat, *probe.Format, MaxFormat)
	}
	if *probe.Format < 1 {
		return nil, fmt.Errorf("%w: format %d", ErrForeign, *probe.Format)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrForeign, err)
	}
	m.Format = *probe.Format
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrForeign, err)
	}
	return &m, nil
}

func (m *Manifest) validate() error {
	if m.Generation < 1 {
		return fmt.Errorf("generation %d is not positive", m.Generation)
	}
	if m.PublishID == "" {
		return errors.New("no publish_id")
	}
	if m.Mode != ModeMulti && m.Mode != ModeMarker {
		return fmt.Errorf("unknown mode %q", string(m.Mode))
	}
	if m.Incarnation != "" && !ValidIncarnation(m.Incarnation) {
		return errors.New("bad incarnation (not 32 lower-case hex digits)")
	}
	if m.Canary != nil {
		if err := m.Canary.validate(m); err != nil {
			return err
		}
	}
	if m.Items == nil {
		m.Items = map[string]Item{}
	}
	for name, it := range m.Items {
		if validateItem(m.Format, name, it) != nil {
			// Report the first bad item in name order, so that the
			// error does not depend on the map's iteration order.
			for _, n := range m.Names() {
				if err := validateItem(m.Format, n, m.Items[n]); err != nil {
					return err
				}
			}
		}
	}
	return treeConflict(m.Format, m.Items)
}

// validateItem checks one item of a manifest of format: a flat name in
// format 1 (a "/" there is refused: a reader before config trees would
// take it for a name it cannot render), a path in FormatTree.
func validateItem(format int, name string, it Item) error {
	if err := validateName(format, name); err != nil {
		return err
	}
	if !isSHA256Hex(it.SHA256) {
		return fmt.Errorf("item %q: bad sha256", name)
	}
	if it.Size < 0 {
		return fmt.Errorf("item %q: negative size", name)
	}
	return nil
}

// validateName checks an item name of a manifest in format: a path in
// FormatTree, a flat name before.
func validateName(format int, name string) error {
	if format == FormatTree {
		return ValidatePath(name)
	}
	return ValidateName(name)
}

// isSHA256Hex reports whether s is 64 lower-case hex digits.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	var bad byte // no branch per byte: this runs on every notification
	for i := 0; i < len(s); i++ {
		bad |= notLowerHex[s[i]]
	}
	return bad == 0
}

// notLowerHex[c] is 1 unless c is 0-9 or a-f.
var notLowerHex = func() (t [256]byte) {
	for c := range t {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			t[c] = 1
		}
	}
	return t
}()

// MaxNameLen bounds item names; they become both znode names and file names.
const MaxNameLen = 255

// ValidateName checks that name can be a flat item (a path of one
// component, all that a format-1 manifest holds): a plain file name that
// ZooKeeper can hold as a node name, not reserved, and safe to render as a
// file (no path separators, no leading dot pair, no control characters).
// ValidatePath checks item paths.
func ValidateName(name string) error {
	if plainName(name) {
		return nil // the common case, in one pass
	}
	return checkName(name)
}

// checkName is ValidateName's checks, one by one.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("item name is empty")
	case name == MarkerName:
		return fmt.Errorf("item name %q is reserved (marker-mode publishes use it)", name)
	case name == "." || name == "..":
		return fmt.Errorf("item name %q is not a file name", name)
	case strings.HasPrefix(name, ".."):
		return fmt.Errorf("item name %q: names starting with \"..\" are reserved for the atomic directory writer", name)
	case strings.ContainsRune(name, '/'):
		return fmt.Errorf("item name %q contains '/'", name)
	case len(name) > MaxNameLen:
		return fmt.Errorf("item name %.40q... is %d bytes, more than %d", name, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("item name %q is not valid UTF-8", name)
	case name == "zookeeper":
		return fmt.Errorf("item name %q is reserved by ZooKeeper", name)
	}
	pos := 0
	for _, r := range name {
		pos++
		if zkRefuses(r) {
			return fmt.Errorf("item name %q: character %d is %U, which a ZooKeeper node name cannot hold", name, pos, r)
		}
	}
	return nil
}

// plainName reports whether name is valid by the common case's rules
// alone: 1 to MaxNameLen bytes of printable ASCII other than '/', not
// starting with '.', not reserved. Every such name passes ValidateName's
// checks (none of them refuses printable ASCII but '/' and the reserved
// names); any other name takes them one by one, with their messages.
func plainName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen || name[0] == '.' || name == MarkerName || name == "zookeeper" {
		return false
	}
	var bad byte // no branch per byte: every cache validates every name of every root it reads
	for i := 0; i < len(name); i++ {
		bad |= notPlainName[name[i]]
	}
	return bad == 0
}

// notPlainName[c] is 1 for the bytes plainName leaves to ValidateName's
// checks: control characters, '/', DEL and every non-ASCII byte.
var notPlainName = func() (t [256]byte) {
	for c := range 256 {
		if c < 0x20 || c == '/' || c >= 0x7f {
			t[c] = 1
		}
	}
	return t
}()

// zkRefuses reports whether ZooKeeper refuses r in a node name. The rule is
// the server's PathUtils.validatePath: U+0000-U+001F, U+007F-U+009F,
// U+D800-U+F8FF and U+FFF0-U+FFFF. Java sees a character above U+FFFF as a
// surrogate pair (U+D800-U+DFFF), so every supplementary character (emoji,
// most historic scripts) is refused too: the server answers "invalid
// arguments" to a create naming one.
func zkRefuses(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0
}
