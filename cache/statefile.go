package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/internal/durable"
	"github.com/zkconf/zkconf/manifest"
)

// The persisted state (WithStateFile) of a cache with state file path is
// one pack of item contents and one small commit file, so that an apply
// writes the changed items' bytes and one commit file, and creates no
// inode in the common case.
//
// The pack is a file of the item directory path.d named "pack-" and
// digits: the contents of the items (each distinct content once, keyed by
// its hex sha256) one after the other, nothing else. It is append-only:
// an apply appends the contents that the current pack does not hold yet
// (an existing file: no new inode, no directory entry) and fsyncs it. When
// the pack has grown past twice the bytes the new generation references
// plus packSlack (the contents of older generations), the apply writes a
// new pack instead, holding only the new generation's contents (created,
// written and fsynced with the item directory); the older pack is removed
// after the commit point. Bytes a commit file does not reference (an
// append a crash or an error cut short, older generations' contents) are
// never read.
//
// The commit file, path itself, is one small JSON document naming the
// generation and where its contents are:
//
//	{
//	  "kind":     "zkconf-cache-state",
//	  "format":   3,
//	  "checksum": "<hex sha256 of the exact bytes of body>",
//	  "body": {
//	    "root":     "/config",
//	    "zxid":     4294967321,
//	    "saved_at": "2025-01-02T03:04:05Z",
//	    "manifest": { ...the generation's manifest, as published... },
//	    "pack":     "pack-123456789",
//	    "at":       [ <offset in the pack of each distinct content>, ... ]
//	  }
//	}
//
// Its content is written to a temporary file of its directory and fsynced
// together with the pack (and, for a new pack, the item directory); then
// the temporary file is renamed over path and the directory fsynced. The
// rename is the commit point: the pack bytes it names are durable before
// it, and nothing it names is removed or overwritten after it (the pack
// is only appended to, and a new pack has a new name).
//
// The write's durability (Snapshot.Durable, what a consumer with
// WithDurableBarrier waits for before it shows the generation) is
// reached once the rename is durable, before the older pack's removal.
//
// A crash before the commit point leaves the previous commit file and the
// pack it names, whose referenced bytes are untouched (an append writes
// past them); a crash after it leaves the new generation and perhaps an
// older pack, which the next process's first write removes. On load the
// commit file's checksum, the root and the manifest are checked, and every
// item's bytes are read from the pack and checked (size and sha256)
// against the manifest; a state that fails any check (torn, missing or
// corrupt) is not used at all (the cache logs why and starts without a
// persisted snapshot), never served partly.
//
// Older layouts are still read: format 2 (the commit file without pack
// and offsets, one file per distinct content in path.d named by its hex
// sha256) and format 1 (every item inline, base64, in the body's
// "items"). The cache converts them when it loads them (New writes the
// loaded generation in format 3, then removes the old item files).
//
// One cache owns a state file path. In path.d it only ever removes files
// whose names it could have written (packs, 64 hex digits, or its
// temporaries), nothing else.
const (
	stateKind = "zkconf-cache-state"
	// stateFormat is the format written; stateFormatV2 (a file per item)
	// and stateFormatV1 (items inline) are still read.
	stateFormat   = 3
	stateFormatV2 = 2
	stateFormatV1 = 1
	// maxStateFile bounds what New reads (the commit file, and the items
	// together): a config set is bounded by ZooKeeper's znode sizes, so
	// anything bigger is not ours.
	maxStateFile = 256 << 20
	// itemDirSuffix makes the item directory's name from the state file's.
	itemDirSuffix = ".d"
	// tmpMarker is in the name of every temporary file of the state.
	tmpMarker = ".tmp-"
	// packPrefix starts every pack's name (digits follow).
	packPrefix = "pack-"
	// packSlack is how many bytes of older generations' contents a pack
	// may hold beyond the live ones before a write starts a new pack: a
	// new pack costs an inode and a directory fsync, a grown one only
	// disk space.
	packSlack = 1 << 20
)

type stateHeader struct {
	Kind     string          `json:"kind"`
	Format   int             `json:"format"`
	Checksum string          `json:"checksum"`
	Body     json.RawMessage `json:"body"`
}

type stateBody struct {
	Root     string          `json:"root"`
	Zxid     int64           `json:"zxid"`
	SavedAt  time.Time       `json:"saved_at"`
	Manifest json.RawMessage `json:"manifest"`
	// Left is the incarnations held before (Snapshot.LeftIncarnations).
	Left []IncarnationMark `json:"left_incarnations,omitempty"`
	// Items holds every item's content in format 1 only.
	Items map[string][]byte `json:"items,omitempty"`
	// Pack names the pack in the item directory (format 3), and At is
	// the offset in it of each distinct content, in the order in which
	// the manifest's sorted item names first name each (a list, not a
	// map by hash: half the bytes, and no hash to encode and decode).
	Pack string  `json:"pack,omitempty"`
	At   []int64 `json:"at,omitempty"`
}

// errStateFile marks a persisted state that exists but cannot be used.
var errStateFile = errors.New("unusable state file")

// stateCommit is a decoded, checked commit file.
type stateCommit struct {
	format int
	m      *manifest.Manifest
	zxid   int64
	left   []IncarnationMark
	// items is every item's content (format 1), already checked against
	// m; nil in formats 2 and 3, whose items are in the item directory.
	items map[string][]byte
	// pack and at locate the contents in format 3 (stateBody).
	pack string
	at   map[string]int64
}

// encodeState returns the commit file bytes of s, whose contents are at
// the offsets at (by hex sha256) in the pack named pack.
func encodeState(root string, s *Snapshot, pack string, at map[string]int64, now time.Time) ([]byte, error) {
	offsets := make([]int64, 0, len(at))
	seen := make(map[string]struct{}, len(at))
	for _, name := range s.names {
		h := s.m.Items[name].SHA256
		if _, ok := seen[h]; !ok {
			seen[h] = struct{}{}
			offsets = append(offsets, at[h])
		}
	}
	body, err := json.Marshal(stateBody{
		Root:     root,
		Zxid:     s.zxid,
		SavedAt:  now.UTC(),
		Manifest: s.m.Encode(),
		Left:     s.left,
		Pack:     pack,
		At:       offsets,
	})
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	sum := sha256.Sum256(body)
	out, err := json.Marshal(stateHeader{Kind: stateKind, Format: stateFormat, Checksum: hex.EncodeToString(sum[:]), Body: body})
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return append(out, '\n'), nil
}

// decodeState checks and parses a commit file for root. Every failure wraps
// errStateFile.
func decodeState(root string, data []byte) (*stateCommit, error) {
	var h stateHeader
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", errStateFile, err)
	}
	if h.Kind != stateKind {
		return nil, fmt.Errorf("%w: kind %q is not %q", errStateFile, h.Kind, stateKind)
	}
	if h.Format != stateFormat && h.Format != stateFormatV2 && h.Format != stateFormatV1 {
		return nil, fmt.Errorf("%w: format %d, this zkconf reads %d", errStateFile, h.Format, stateFormat)
	}
	sum := sha256.Sum256(h.Body)
	if hex.EncodeToString(sum[:]) != h.Checksum {
		return nil, fmt.Errorf("%w: checksum mismatch (file corrupted)", errStateFile)
	}
	var b stateBody
	if err := json.Unmarshal(h.Body, &b); err != nil {
		return nil, fmt.Errorf("%w: body: %v", errStateFile, err)
	}
	if b.Root != root {
		return nil, fmt.Errorf("%w: it holds root %q, not %q", errStateFile, b.Root, root)
	}
	m, err := manifest.Decode(b.Manifest)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest: %w", errStateFile, err)
	}
	if b.Zxid <= 0 {
		return nil, fmt.Errorf("%w: zxid %d", errStateFile, b.Zxid)
	}
	if m.TotalSize() > maxStateFile {
		return nil, fmt.Errorf("%w: items total %d bytes, more than %d", errStateFile, m.TotalSize(), maxStateFile)
	}
	for _, l := range b.Left {
		if !manifest.ValidIncarnation(l.Incarnation) || l.Generation < 1 || l.Zxid <= 0 {
			return nil, fmt.Errorf("%w: bad left incarnation %q", errStateFile, l.Incarnation)
		}
	}
	c := &stateCommit{format: h.Format, m: m, zxid: b.Zxid, left: b.Left}
	if h.Format != stateFormatV1 && b.Items != nil {
		return nil, fmt.Errorf("%w: format %d holds no items inline", errStateFile, h.Format)
	}
	switch h.Format {
	case stateFormat:
		if !validPackName(b.Pack) {
			return nil, fmt.Errorf("%w: pack name %q", errStateFile, b.Pack)
		}
		at := make(map[string]int64, len(b.At))
		for _, name := range m.Names() {
			it := m.Items[name]
			if _, ok := at[it.SHA256]; ok {
				continue
			}
			if len(at) == len(b.At) {
				return nil, fmt.Errorf("%w: item %q: no offset in the pack", errStateFile, name)
			}
			off := b.At[len(at)]
			if off < 0 || off > maxStateFile-it.Size {
				return nil, fmt.Errorf("%w: item %q: offset %d", errStateFile, name, off)
			}
			at[it.SHA256] = off
		}
		if len(b.At) != len(at) {
			return nil, fmt.Errorf("%w: %d offsets for %d contents", errStateFile, len(b.At), len(at))
		}
		c.pack, c.at = b.Pack, at
		return c, nil
	case stateFormatV2:
		if b.Pack != "" || b.At != nil {
			return nil, fmt.Errorf("%w: format %d has no pack", errStateFile, h.Format)
		}
		return c, nil
	}
	if b.Pack != "" || b.At != nil {
		return nil, fmt.Errorf("%w: format %d has no pack", errStateFile, h.Format)
	}
	if len(b.Items) != len(m.Items) {
		return nil, fmt.Errorf("%w: %d items for a manifest of %d", errStateFile, len(b.Items), len(m.Items))
	}
	for name, data := range b.Items {
		if !m.Matches(name, data) {
			return nil, fmt.Errorf("%w: item %q does not match the manifest", errStateFile, name)
		}
	}
	c.items = b.Items
	if c.items == nil {
		c.items = map[string][]byte{}
	}
	return c, nil
}

// validPackName reports whether name is one a state store gives its packs:
// packPrefix and 1 to 20 digits (os.CreateTemp's), never a path.
func validPackName(name string) bool {
	digits, ok := strings.CutPrefix(name, packPrefix)
	return ok && len(digits) >= 1 && len(digits) <= 20 && strings.Trim(digits, "0123456789") == ""
}

// stateStore is a cache's persisted state. Only the cache's sync loop (and
// New, before it starts) uses it.
type stateStore struct {
	path, dir, root string
	// pack is the pack the last commit file written or loaded by this
	// store names ("" when there is none: the next write starts a pack),
	// and have the offset in it of each content that commit references.
	pack string
	have map[string]int64
	// slack is packSlack (tests lower it).
	slack int64
	// legacy: the state loaded is in an older format (converted by the
	// first write).
	legacy bool
	// swept: orphans and temporaries of earlier runs have been removed.
	swept bool
	// dirReady: the item directory exists and its entry is durable.
	dirReady bool
	// crashAt, when set (tests), runs at each step of a write (the
	// writeStep constants); an error stops the write there, as a crash
	// would.
	crashAt atomic.Pointer[func(step string) error]
	// fsyncDir, when set (tests, before the store is used), stands in for
	// the fsync(2) of the state's directories.
	fsyncDir func(*os.File) error
	// last describes the last write (tests and benchmarks).
	last writeReport
}

// The steps of a write at which crashAt runs, in their order: the pack
// bytes and the commit file's temporary are durable (and a new pack's
// entry); the commit file is renamed into place; the rename is durable
// (the write's result); an older pack is removed.
const (
	stepSynced    = "synced"
	stepRenamed   = "renamed"
	stepCommitted = "committed"
	stepSwept     = "swept"
	// stepRetract runs before retract removes the commit file (an error
	// there fails the removal).
	stepRetract = "retract"
)

// writeReport counts what one write did.
type writeReport struct {
	itemFiles    int   // distinct contents written to the pack
	itemBytes    int64 // bytes of them
	commitBytes  int64 // bytes of the commit file
	newPack      bool  // a new pack was started
	removedFiles int   // files of older states removed
}

func newStateStore(path, root string) *stateStore {
	return &stateStore{path: path, dir: path + itemDirSuffix, root: root, have: map[string]int64{}, slack: packSlack}
}

// loadState reads the state persisted at path. Nothing persisted is
// (nil, nil).
func loadState(path, root string) (*Snapshot, error) {
	return newStateStore(path, root).load()
}

// writeState persists s at path (a fresh store: every content is written
// to a new pack, and files of earlier states are removed).
func writeState(path, root string, s *Snapshot) error {
	return newStateStore(path, root).write(s)
}

// load reads the persisted state. A missing commit file is (nil, nil);
// every other failure wraps errStateFile and means "no persisted state".
func (st *stateStore) load() (*Snapshot, error) {
	data, err := readBounded(st.path, maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStateFile, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty", errStateFile)
	}
	c, err := decodeState(st.root, data)
	if err != nil {
		return nil, err
	}
	var items map[string][]byte
	switch c.format {
	case stateFormat:
		items, err = st.loadPack(c)
	case stateFormatV2:
		items, err = st.loadItemFiles(c)
	default:
		// Format 1: everything was in the file.
		items = c.items
	}
	if err != nil {
		return nil, err
	}
	st.legacy = c.format != stateFormat
	s := newSnapshot(c.m, c.zxid, items, true)
	s.left = c.left
	return s, nil
}

// loadPack reads and checks every content of a format 3 commit from its
// pack, and makes it the store's.
func (st *stateStore) loadPack(c *stateCommit) (map[string][]byte, error) {
	f, err := os.Open(filepath.Join(st.dir, c.pack))
	if err != nil {
		return nil, fmt.Errorf("%w: pack: %w", errStateFile, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: pack: %w", errStateFile, err)
	}
	items := make(map[string][]byte, len(c.m.Items))
	byHash := make(map[string][]byte, len(c.at))
	for _, name := range c.m.Names() {
		it := c.m.Items[name]
		if b, ok := byHash[it.SHA256]; ok {
			items[name] = b
			continue
		}
		off := c.at[it.SHA256]
		if off+it.Size > fi.Size() {
			return nil, fmt.Errorf("%w: item %q: pack %s ends at %d, before the item's end %d", errStateFile, name, c.pack, fi.Size(), off+it.Size)
		}
		b := make([]byte, it.Size)
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("%w: item %q: pack %s: %w", errStateFile, name, c.pack, err)
		}
		if !c.m.Matches(name, b) {
			return nil, fmt.Errorf("%w: item %q: its bytes in pack %s do not match the manifest (corrupted)", errStateFile, name, c.pack)
		}
		byHash[it.SHA256] = b
		items[name] = b
	}
	st.pack, st.have = c.pack, c.at
	return items, nil
}

// loadItemFiles reads and checks every content of a format 2 commit from
// its item files.
func (st *stateStore) loadItemFiles(c *stateCommit) (map[string][]byte, error) {
	items := make(map[string][]byte, len(c.m.Items))
	byHash := make(map[string][]byte, len(c.m.Items))
	for name, it := range c.m.Items {
		if b, ok := byHash[it.SHA256]; ok {
			items[name] = b
			continue
		}
		b, err := readBounded(filepath.Join(st.dir, it.SHA256), it.Size)
		if err != nil {
			return nil, fmt.Errorf("%w: item %q: %w", errStateFile, name, err)
		}
		if !c.m.Matches(name, b) {
			return nil, fmt.Errorf("%w: item %q: file %s does not match the manifest (corrupted)", errStateFile, name, it.SHA256)
		}
		byHash[it.SHA256] = b
		items[name] = b
	}
	return items, nil
}

// readBounded reads a file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}

// sweep removes every file of the item directory the current commit does
// not reference (older packs, item files of format 2, orphans of a crash
// or of a failed write, temporaries) and the commit file's temporaries.
func (st *stateStore) sweep() {
	if ents, err := os.ReadDir(st.dir); err == nil {
		for _, e := range ents {
			n := e.Name()
			if n == st.pack || e.IsDir() || !ownItemFile(n) {
				continue
			}
			if os.Remove(filepath.Join(st.dir, n)) == nil {
				st.last.removedFiles++
			}
		}
	}
	parent, base := filepath.Dir(st.path), filepath.Base(st.path)
	if ents, err := os.ReadDir(parent); err == nil {
		for _, e := range ents {
			if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, "."+base+tmpMarker) {
				_ = os.Remove(filepath.Join(parent, n))
			}
		}
	}
}

// step runs the test hook crashAt, if any, at step.
func (st *stateStore) step(name string) error {
	if hook := st.crashAt.Load(); hook != nil {
		return (*hook)(name)
	}
	return nil
}

// write persists s: the contents the pack does not hold yet appended to it
// (or every content to a new pack), then the commit file (the commit
// point), then an older pack removed. When it returns nil, s is durable.
// The directories are created with mode 0700 and every file is 0600.
func (st *stateStore) write(s *Snapshot) error {
	if err := st.commit(s); err != nil {
		return err
	}
	return st.cleanup()
}

// commit is write up to its commit point's durability: when it returns
// nil, s is durable, and what is left (cleanup) only frees space.
func (st *stateStore) commit(s *Snapshot) (err error) {
	st.last = writeReport{}
	defer func() {
		if err != nil {
			// A new pack or a temporary of this attempt may be left:
			// the next successful write removes it.
			st.swept = false
		}
	}()
	if err := st.prepare(); err != nil {
		return err
	}
	// The distinct contents, and the bytes they take.
	var order []string // one name per distinct content, in s.names order
	seen := make(map[string]struct{}, len(s.m.Items))
	var live, fresh int64
	for _, name := range s.names {
		it := s.m.Items[name]
		if _, ok := seen[it.SHA256]; ok {
			continue
		}
		seen[it.SHA256] = struct{}{}
		order = append(order, name)
		live += it.Size
		if _, ok := st.have[it.SHA256]; !ok || st.pack == "" {
			fresh += it.Size
		}
	}
	pack, end, err := st.openPack(live, fresh)
	if err != nil {
		return err
	}
	st.last.newPack = end < 0
	end = max(end, 0)
	packName := filepath.Base(pack.Name())
	at := make(map[string]int64, len(order))
	var buf []byte
	for _, name := range order {
		h := s.m.Items[name].SHA256
		if off, ok := st.have[h]; ok && !st.last.newPack {
			at[h] = off
			continue
		}
		at[h] = end + int64(len(buf))
		buf = append(buf, s.content(name)...)
		st.last.itemFiles++
	}
	st.last.itemBytes = int64(len(buf))
	data, err := encodeState(st.root, s, packName, at, time.Now())
	if err != nil {
		_ = pack.Close()
		return err
	}
	tmp, err := st.writeDurable(pack, buf, data)
	if err == nil {
		err = st.step(stepSynced)
	}
	if err == nil {
		// The commit point: the commit file names the new bytes only now.
		if err = os.Rename(tmp, st.path); err != nil {
			err = fmt.Errorf("state file: rename into place: %w", err)
		}
	}
	if err != nil {
		if tmp != "" {
			_ = os.Remove(tmp)
		}
		if st.last.newPack {
			// Nothing names it.
			_ = os.Remove(pack.Name())
		}
		return err
	}
	st.last.commitBytes = int64(len(data))
	if err := st.step(stepRenamed); err != nil {
		return err
	}
	if err := st.syncDir(filepath.Dir(st.path)); err != nil {
		return fmt.Errorf("state file: %w", err)
	}

	// Committed. What follows only frees space.
	st.pack, st.have, st.legacy = packName, at, false
	return st.step(stepCommitted)
}

// cleanup ends a write that committed: the files of older states (an older
// pack, a conversion's item files, what a failed write left) are removed.
func (st *stateStore) cleanup() error {
	if !st.swept || st.last.newPack {
		st.swept = true
		st.sweep()
	}
	return st.step(stepSwept)
}

// openPack opens the pack a write of a generation of live bytes, fresh of
// them not in the current pack, writes to, and returns it with the offset
// at which the write appends: the current pack when there is one and it
// stays under twice live plus packSlack, else a new pack (offset -1: the
// write starts at 0).
func (st *stateStore) openPack(live, fresh int64) (*os.File, int64, error) {
	if st.pack != "" {
		f, err := os.OpenFile(filepath.Join(st.dir, st.pack), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			end, serr := f.Seek(0, io.SeekEnd)
			if serr == nil && end+fresh <= 2*live+st.slack {
				return f, end, nil
			}
			_ = f.Close()
			if serr != nil {
				return nil, 0, fmt.Errorf("state file: pack: %w", serr)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, 0, fmt.Errorf("state file: pack: %w", err)
		}
		// Grown past its bound, or gone: a new pack.
	}
	f, err := createFile(os.CreateTemp(st.dir, packPrefix+"*"))
	if err != nil {
		return nil, 0, fmt.Errorf("state file: new pack: %w", err)
	}
	return f, -1, nil
}

// writeDurable makes durable, before the commit point, everything the
// commit file will name: buf appended to pack (which it closes), a new
// pack's directory entry, and the commit file's content in a temporary
// file of the state file's directory, whose path it returns. The fsyncs
// are issued together, so that they wait for the disk once, not once
// each. The caller renames the temporary file (the commit point).
func (st *stateStore) writeDurable(pack *os.File, buf, commit []byte) (tmp string, err error) {
	files := []*os.File{pack}
	closeAll := func() {
		for _, f := range files {
			_ = f.Close() // may be closed already; irrelevant then
		}
	}
	if len(buf) > 0 {
		if err := writeAll(pack, buf); err != nil {
			closeAll()
			return "", fmt.Errorf("state file: pack: %w", err)
		}
	}
	f, err := createFile(os.CreateTemp(filepath.Dir(st.path), "."+filepath.Base(st.path)+tmpMarker+"*"))
	if err == nil {
		tmp = f.Name()
		files = append(files, f)
		err = writeAll(f, commit)
	}
	if err != nil {
		closeAll()
		if tmp != "" {
			_ = os.Remove(tmp)
		}
		return "", fmt.Errorf("state file: %w", err)
	}
	var dirErr chan error
	if st.last.newPack {
		// The new pack's entry, beside the files' own fsyncs.
		dirErr = make(chan error, 1)
		go func() { dirErr <- st.syncDir(st.dir) }()
	}
	errs := durable.SyncClose(files)
	if dirErr != nil {
		errs = append(errs, <-dirErr)
	}
	if err := errors.Join(errs...); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("state file: %w", err)
	}
	return tmp, nil
}

// createFile passes on what os.OpenFile or os.CreateTemp returned, and
// sets the mode of the file (0600) when it was opened.
func createFile(f *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("chmod %s: %w", f.Name(), err)
	}
	return f, nil
}

// writeAll writes data to f.
func writeAll(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return nil
}

// retract removes the commit file, durably, after a failed write: the
// state it names is older than the snapshot being handed out. The pack
// stays (the next successful write starts a new one and sweeps it).
func (st *stateStore) retract() error {
	if err := st.step(stepRetract); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	if err := os.Remove(st.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("state file: %w", err)
	}
	st.pack, st.have = "", map[string]int64{}
	st.swept = false
	if err := st.syncDir(filepath.Dir(st.path)); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// prepare creates the state file's directory and the item directory (mode
// 0700) and makes the latter's entry durable.
func (st *stateStore) prepare() error {
	if st.dirReady {
		return nil
	}
	parent := filepath.Dir(st.path)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("state file directory: %w", err)
	}
	err := os.Mkdir(st.dir, 0o700)
	switch {
	case err == nil:
		if err := st.syncDir(parent); err != nil {
			return fmt.Errorf("state file: %w", err)
		}
	case errors.Is(err, os.ErrExist):
		if fi, err := os.Stat(st.dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("state file: %s exists and is not a directory", st.dir)
		}
	default:
		return fmt.Errorf("state file item directory: %w", err)
	}
	st.dirReady = true
	return nil
}

// ownItemFile reports whether name is one the state store writes in its
// item directory: a pack, an item file of format 2 (64 lower-case hex
// digits) or a temporary.
func ownItemFile(name string) bool {
	if validPackName(name) {
		return true
	}
	if i := strings.Index(name, tmpMarker); i > 0 && name[0] == '.' {
		name = name[1:i]
	}
	return len(name) == 64 && strings.Trim(name, "0123456789abcdef") == ""
}

// syncDir fsyncs dir with durable's policy (EINVAL tolerated: some FUSE and
// network filesystems refuse directory fsyncs).
func (st *stateStore) syncDir(dir string) error {
	return durable.SyncDirWith(dir, st.fsyncDir)
}
