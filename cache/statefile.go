package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/internal/durable"
	"github.com/zkconf/zkconf/manifest"
)

// The persisted state (WithStateFile) of a cache with state file path is
// incremental, so that an apply writes only the items that changed. Item
// contents are in the item directory path.d, one file per distinct content,
// named by the hex sha256 of its bytes (content-addressed: items with equal
// content share a file), written only when the content is new: created
// under that name (a file of that name already there is replaced through
// a temporary file and a rename instead) and fsynced together with the
// directory and the commit file's temporary file (writeDurable). The state
// file itself, the commit file, is one small JSON document naming the
// generation:
//
//	{
//	  "kind":     "zkconf-cache-state",
//	  "format":   2,
//	  "checksum": "<hex sha256 of the exact bytes of body>",
//	  "body": {
//	    "root":     "/config",
//	    "zxid":     4294967321,
//	    "saved_at": "2025-01-02T03:04:05Z",
//	    "manifest": { ...the generation's manifest, as published... }
//	  }
//	}
//
// It is replaced atomically (temporary file in the same directory, fsync,
// rename, directory fsync); the rename, once every new item file and the
// item directory are durable, is the commit point. Item files the new manifest no longer references are
// removed after it.
//
// A crash before the commit point leaves the previous commit file and every
// item file it references (nothing is removed before the commit), so the
// previous generation loads; a crash after it leaves the new generation and
// perhaps orphan item files, which the next process's first write removes.
// On load the commit file's checksum, the root and the manifest are checked,
// and every item file is read and checked (size and sha256) against the
// manifest; a state that fails any check (torn, missing or corrupt) is not
// used at all (the cache logs why and starts without a persisted snapshot),
// never served partly.
//
// Format 1, the previous single-file layout (the body also held every item,
// base64-encoded, in "items"), is still read: the first apply after an
// upgrade writes format 2 over it.
//
// One cache owns a state file path. In path.d it only ever removes files
// whose names it could have written (64 hex digits, or its temporaries),
// nothing else.
const (
	stateKind = "zkconf-cache-state"
	// stateFormat is the format written; stateFormatV1 (items inline) is
	// still read.
	stateFormat   = 2
	stateFormatV1 = 1
	// maxStateFile bounds what New reads (the commit file, and the items
	// together): a config set is bounded by ZooKeeper's znode sizes, so
	// anything bigger is not ours.
	maxStateFile = 256 << 20
	// itemDirSuffix makes the item directory's name from the state file's.
	itemDirSuffix = ".d"
	// tmpMarker is in the name of every temporary file of the state.
	tmpMarker = ".tmp-"
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
	// m; nil in format 2, whose items are in the item directory.
	items map[string][]byte
}

// encodeState returns the commit file bytes of s.
func encodeState(root string, s *Snapshot, now time.Time) ([]byte, error) {
	body, err := json.Marshal(stateBody{
		Root:     root,
		Zxid:     s.zxid,
		SavedAt:  now.UTC(),
		Manifest: s.m.Encode(),
		Left:     s.left,
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
	if h.Format != stateFormat && h.Format != stateFormatV1 {
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
	if h.Format == stateFormat {
		if b.Items != nil {
			return nil, fmt.Errorf("%w: format %d holds no items inline", errStateFile, h.Format)
		}
		return c, nil
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

// stateStore is a cache's persisted state. Only the cache's sync loop (and
// New, before it starts) uses it.
type stateStore struct {
	path, dir, root string
	// have holds the hashes whose item files the last commit file written
	// or loaded by this store references, each one complete on disk.
	have map[string]struct{}
	// swept: orphans and temporaries of earlier runs have been removed.
	swept bool
	// dirReady: the item directory exists and its entry is durable.
	dirReady bool
	// beforeCommit, when set (tests), runs after the item files are
	// durable and before the commit file is replaced; an error stops the
	// write there, as a crash would.
	beforeCommit atomic.Pointer[func() error]
	// fsyncDir, when set (tests, before the store is used), stands in for
	// the fsync(2) of the state's directories.
	fsyncDir func(*os.File) error
	// last describes the last write (tests and benchmarks).
	last writeReport
}

// writeReport counts what one write did.
type writeReport struct {
	itemFiles    int   // item files written
	itemBytes    int64 // bytes in them
	commitBytes  int64 // bytes of the commit file
	removedFiles int   // unreferenced item files removed
}

func newStateStore(path, root string) *stateStore {
	return &stateStore{path: path, dir: path + itemDirSuffix, root: root, have: map[string]struct{}{}}
}

// loadState reads the state persisted at path. Nothing persisted is
// (nil, nil).
func loadState(path, root string) (*Snapshot, error) {
	return newStateStore(path, root).load()
}

// writeState persists s at path (a fresh store: every item file is
// written, and files of earlier states are removed).
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
	if c.items != nil {
		// Format 1: everything was in the file. The first write
		// replaces it with format 2 (every item file is new then).
		s := newSnapshot(c.m, c.zxid, c.items, true)
		s.left = c.left
		return s, nil
	}
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
	for h := range byHash {
		st.have[h] = struct{}{}
	}
	s := newSnapshot(c.m, c.zxid, items, true)
	s.left = c.left
	return s, nil
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
// not reference (orphans of a crash or of a failed write, temporaries) and
// the commit file's temporaries.
func (st *stateStore) sweep() {
	if ents, err := os.ReadDir(st.dir); err == nil {
		for _, e := range ents {
			n := e.Name()
			if _, ok := st.have[n]; ok || e.IsDir() || !ownItemFile(n) {
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

// write persists s: the item files it does not have yet, then the commit
// file (the commit point), then removes item files nothing references.
// When it returns nil, s is durable. The directories are created with mode
// 0700 and every file is 0600.
func (st *stateStore) write(s *Snapshot) (err error) {
	st.last = writeReport{}
	defer func() {
		if err != nil {
			// Item files of this attempt may be left: the next
			// successful write removes them.
			st.swept = false
		}
	}()
	if err := st.prepare(); err != nil {
		return err
	}
	next := make(map[string]struct{}, len(s.m.Items))
	var todo []string // names of the items whose files are written
	for _, name := range s.names {
		h := s.m.Items[name].SHA256
		if _, ok := next[h]; ok {
			continue
		}
		next[h] = struct{}{}
		if _, ok := st.have[h]; ok {
			continue
		}
		todo = append(todo, name)
		st.last.itemFiles++
		st.last.itemBytes += int64(len(s.items[name]))
	}
	data, err := encodeState(st.root, s, time.Now())
	if err != nil {
		return err
	}
	tmp, err := st.writeDurable(s, todo, data)
	if err != nil {
		return err
	}
	if hook := st.beforeCommit.Load(); hook != nil {
		if err := (*hook)(); err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	// The commit point: the commit file names the new items only now.
	if err := os.Rename(tmp, st.path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("state file: rename into place: %w", err)
	}
	st.last.commitBytes = int64(len(data))
	parent := filepath.Dir(st.path)
	if err := st.syncDir(parent); err != nil {
		return fmt.Errorf("state file: %w", err)
	}

	// Committed. What follows only frees space.
	prev := st.have
	st.have = next
	if !st.swept {
		st.swept = true
		st.sweep()
		return nil
	}
	for h := range prev {
		if _, ok := next[h]; !ok {
			if os.Remove(filepath.Join(st.dir, h)) == nil {
				st.last.removedFiles++
			}
		}
	}
	return nil
}

// writeDurable makes durable, before the commit point, everything the
// commit file will name: the item files of names (new files created under
// their final names: no commit file can reference a file that did not
// exist, and a crash leaves orphans the next write sweeps; an existing one
// is replaced by rename), their directory's entries, and the
// commit file's content in a temporary file of the state file's directory,
// whose path it returns. The fsyncs are issued together, so that they wait
// for the disk once, not once each (at most durable.Batch files open at
// once). The caller renames the temporary file (the commit point).
func (st *stateStore) writeDurable(s *Snapshot, names []string, commit []byte) (tmp string, err error) {
	parent := filepath.Dir(st.path)
	defer func() {
		if err != nil && tmp != "" {
			_ = os.Remove(tmp)
			tmp = ""
		}
	}()
	for start := 0; ; start += durable.Batch {
		batch := names[start:min(start+durable.Batch, len(names))]
		last := start+durable.Batch >= len(names)
		files := make([]*os.File, 0, len(batch)+1)
		closeAll := func() {
			for _, f := range files {
				_ = f.Close() // may be closed already; irrelevant then
			}
		}
		for _, name := range batch {
			h := s.m.Items[name].SHA256
			f, err := createFile(os.OpenFile(filepath.Join(st.dir, h), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600))
			if errors.Is(err, fs.ErrExist) {
				// A file of that name that this store does not hold (an
				// orphan, or one a state file this store did not load
				// names): replaced whole, never truncated in place.
				err = durable.Replace(filepath.Join(st.dir, h), "."+h+tmpMarker, s.items[name], 0o600)
				if err == nil {
					continue
				}
			} else if err == nil {
				files = append(files, f)
				err = writeAll(f, s.items[name])
			}
			if err != nil {
				closeAll()
				return tmp, fmt.Errorf("state file: item %q: %w", name, err)
			}
		}
		var dirErr chan error
		if last {
			f, err := createFile(os.CreateTemp(parent, "."+filepath.Base(st.path)+tmpMarker+"*"))
			if err == nil {
				tmp = f.Name()
				files = append(files, f)
				err = writeAll(f, commit)
			}
			if err != nil {
				closeAll()
				return tmp, fmt.Errorf("state file: %w", err)
			}
			if len(names) > 0 {
				// Every item file exists: the directory's fsync covers
				// their entries, beside the files' own fsyncs.
				dirErr = make(chan error, 1)
				go func() { dirErr <- st.syncDir(st.dir) }()
			}
		}
		errs := durable.SyncClose(files)
		if dirErr != nil {
			errs = append(errs, <-dirErr)
		}
		if err := errors.Join(errs...); err != nil {
			return tmp, fmt.Errorf("state file: %w", err)
		}
		if last {
			return tmp, nil
		}
	}
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
// state it names is older than the snapshot being handed out. Item files
// stay (the next successful write sweeps what it does not reference).
func (st *stateStore) retract() error {
	if err := os.Remove(st.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("state file: %w", err)
	}
	st.have = map[string]struct{}{}
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
// item directory: an item file (64 lower-case hex digits) or a temporary.
func ownItemFile(name string) bool {
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
