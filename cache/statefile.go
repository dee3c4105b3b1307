package cache

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/internal/durable"
	"github.com/zkconf/zkconf/manifest"
)

// The persisted state (WithStateFile) of a cache with state file path is
// one append-only pack in the item directory path.d, holding the item
// contents and, after each write's contents, that write's commit record;
// path itself is a small pointer naming the pack. An apply appends its
// new contents and its commit record to the pack and syncs the pack once:
// that sync is the commit point, one disk wait per state write. No file
// is created, renamed or removed, and no directory is synced, in the
// common case.
//
// The pack, path.d/pack-<digits>, is:
//
//	header   "zkconf-state-pk4" and 16 random bytes (the pack's key)
//	frame    contents... | body | trailer
//	frame    ...
//
// A frame is one write: the contents the pack does not hold yet (each
// distinct content once, keyed by its hex sha256, raw, one after the
// other), then the commit record: body, the JSON of the generation (root,
// zxid, saved_at, manifest, left incarnations, and "at", the offset in the
// pack of each distinct content, which may be in this frame or an earlier
// one), then a fixed-size trailer of packTrailerSize bytes:
//
//	"zkcommit" | frame start (u64) | body length (u64) |
//	sha256(key | the 24 bytes before | body) | "zkc-end\n"
//
// (integers big-endian). The frame start is where the frame's contents
// begin: the end of the previous frame. The checksum is keyed with the
// pack's random key, which only the state directory's owner can read, so
// that a published item's content cannot pass for a commit record when
// the loader scans for one (below).
//
// The pointer, path, is checksummed JSON like the older commit files:
//
//	{"kind": "zkconf-cache-state", "format": 4, "checksum": "<hex sha256 of body>",
//	 "body": {"root": "/config", "pack": "pack-123456789"}}
//
// It changes only when a write starts a new pack: the first write, a
// write after a failed one (retract), a compaction (the pack holds more
// than packGrowth times the live bytes plus packSlack; the new pack holds
// the live contents only), the conversion of an older layout. Such a write creates
// the pack, writes it whole and syncs it together with the item
// directory (the pack's entry) and a temporary holding the new pointer,
// then renames the temporary over path and syncs path's directory: that
// rename is its commit point. The older pack is removed after it
// (cleanup), never before the new pointer's entry is durable.
//
// An append write syncs the pack with fdatasync(2): it flushes the
// appended bytes and the metadata needed to read them back, the file's
// new size among them (what an append changes; the mtime it does not
// flush is never read). It also truncates the pack to the end of the last
// commit it knows, first, when the pack is longer (a torn append, or one
// a full disk cut short): a frame is only ever appended right after an
// intact one, so the pack is intact frames and then at most one torn tail.
// The first write of a process also syncs both directories, so that a
// pointer or pack entry an earlier process renamed or created but did not
// make durable (killed before its directory sync) is durable before this
// process's first commit counts.
//
// The loader reads the pointer, the pack's header and the last frame:
// it reads the pack's end backwards (in chunks) for a trailer whose magic,
// lengths and keyed checksum hold, and takes the frame it ends. In the
// common case that is the pack's last packTrailerSize bytes, and start-up
// reads the trailer, the body and the live contents, never older frames.
// A torn tail (a crash in the middle of an append: a partial frame, zeros,
// a trailer that does not check) is skipped by the backward scan, as is a
// frame whose commit record landed but one of whose own contents did not
// (the disk writes back pages in any order before the sync): a content
// of the frame that does not match its hash sends the loader to the
// frame before. A content of an earlier frame that does not match is
// corruption (those bytes were durable when the frame was written): the
// state is not used at all (the cache logs why and starts without a
// persisted snapshot), never served partly.
//
// Snapshot.Durable (WithDurableBarrier) returns once the commit point is
// durable: the append's fdatasync, or the pointer's rename and its
// directory's sync.
//
// Older layouts are still read: format 3 (the commit file at path naming
// a pack of bare contents and their offsets), format 2 (the commit file,
// and one file per distinct content in path.d named by its hex sha256) and
// format 1 (every item inline, base64, in the body's "items"). The cache
// converts them when it loads them (New writes the loaded generation in
// format 4, a new pack, then removes the old files).
//
// One cache owns a state file path. In path.d it only ever removes files
// whose names it could have written (packs, 64 hex digits, or its
// temporaries), nothing else.
const (
	stateKind = "zkconf-cache-state"
	// stateFormat is the format written (the pointer's; its pack is
	// framed); stateFormatV3 (a commit file and a pack of bare contents),
	// stateFormatV2 (a file per item) and stateFormatV1 (items inline)
	// are still read.
	stateFormat   = 4
	stateFormatV3 = 3
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
	// packSlack is how many bytes of older generations' contents and
	// commit records a pack may hold beyond packGrowth times the live
	// ones before a write starts a new pack: a new pack costs an inode, a
	// rename and two directory syncs, a grown one only disk space.
	packSlack = 1 << 20
	// packGrowth is how many times the live bytes (plus packSlack) a pack
	// may hold before a write starts a new one. When every item of a set
	// changes (20 × 64 KiB), a growth of 2 started a new pack every second
	// write: its create, the pointer's temporary, rename and two directory
	// syncs (two disk waits one after the other where an append waits
	// once) and the removal of the older pack, 2–26 ms of unlink on a disk
	// with online discard, on the agent's one processor while its renderer
	// staged (docs/bench/latency-dir64-2026-11-27). At 4 it is one write
	// in four, for at most twice the disk space (a 1.3 MB set: 6.2 MB).
	packGrowth = 4
	// packMagic starts a framed pack (format 4), packKeySize random bytes
	// follow.
	packMagic      = "zkconf-state-pk4"
	packKeySize    = 16
	packHeaderSize = 32 // len(packMagic) + packKeySize
	// packTrailerSize is the size of a commit record's trailer, which
	// starts with trailerMagic and ends with trailerEnd.
	packTrailerSize = 64
	trailerMagic    = "zkcommit"
	trailerEnd      = "zkc-end\n"
	// packScanChunk is how much of the pack the loader reads at once
	// when it looks for the last commit record, and maxScanCandidates
	// how many places holding trailerMagic it checks at most.
	packScanChunk     = 64 << 10
	maxScanCandidates = 1024
)

type stateHeader struct {
	Kind     string          `json:"kind"`
	Format   int             `json:"format"`
	Checksum string          `json:"checksum"`
	Body     json.RawMessage `json:"body"`
}

// stateBody is the body of a commit record (format 4, in the pack), of a
// commit file (formats 1 to 3), and of the pointer (format 4: Root and
// Pack only).
type stateBody struct {
	Root     string          `json:"root"`
	Zxid     int64           `json:"zxid,omitempty"`
	SavedAt  *time.Time      `json:"saved_at,omitempty"`
	Manifest json.RawMessage `json:"manifest,omitempty"`
	// Left is the incarnations held before (Snapshot.LeftIncarnations).
	Left []IncarnationMark `json:"left_incarnations,omitempty"`
	// Items holds every item's content in format 1 only.
	Items map[string][]byte `json:"items,omitempty"`
	// Pack names the pack in the item directory (the pointer of format
	// 4, the commit file of format 3).
	Pack string `json:"pack,omitempty"`
	// At is the offset in the pack of each distinct content (format 4's
	// commit record, format 3's commit file), in the order in which the
	// manifest's sorted item names first name each (a list, not a map by
	// hash: half the bytes, and no hash to encode and decode).
	At []int64 `json:"at,omitempty"`
}

// errStateFile marks a persisted state that exists but cannot be used.
var errStateFile = errors.New("unusable state file")

// stateCommit is a decoded, checked commit file, pointer or commit record.
type stateCommit struct {
	format int
	m      *manifest.Manifest
	zxid   int64
	left   []IncarnationMark
	// items is every item's content (format 1), already checked against
	// m; nil in formats 2 to 4, whose items are in the item directory.
	items map[string][]byte
	// pack names the pack (the pointer of format 4, format 3); at
	// locates the contents in it (format 4's commit record, format 3).
	pack string
	at   map[string]int64
}

// encodeRecordBody returns the body of s's commit record, whose contents
// are at the offsets at (by hex sha256) of the pack; menc is s's manifest,
// encoded.
func encodeRecordBody(root string, s *Snapshot, menc []byte, at map[string]int64, now time.Time) ([]byte, error) {
	offsets := make([]int64, 0, len(at))
	seen := make(map[string]struct{}, len(at))
	for i := range s.names {
		h := s.items[i].meta.SHA256
		if _, ok := seen[h]; !ok {
			seen[h] = struct{}{}
			offsets = append(offsets, at[h])
		}
	}
	saved := now.UTC()
	body, err := json.Marshal(stateBody{
		Root:     root,
		Zxid:     s.zxid,
		SavedAt:  &saved,
		Manifest: menc,
		Left:     s.left,
		At:       offsets,
	})
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return body, nil
}

// encodePointer returns the pointer naming pack for root.
func encodePointer(root, pack string) ([]byte, error) {
	body, err := json.Marshal(stateBody{Root: root, Pack: pack})
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

// decodeState checks and parses what is at the state file's path for
// root: a pointer (format 4: the pack's name only) or a commit file of an
// older format. Every failure wraps errStateFile.
func decodeState(root string, data []byte) (*stateCommit, error) {
	var h stateHeader
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", errStateFile, err)
	}
	if h.Kind != stateKind {
		return nil, fmt.Errorf("%w: kind %q is not %q", errStateFile, h.Kind, stateKind)
	}
	if h.Format < stateFormatV1 || h.Format > stateFormat {
		return nil, fmt.Errorf("%w: format %d, this zkconf reads %d", errStateFile, h.Format, stateFormat)
	}
	sum := sha256.Sum256(h.Body)
	if hex.EncodeToString(sum[:]) != h.Checksum {
		return nil, fmt.Errorf("%w: checksum mismatch (file corrupted)", errStateFile)
	}
	if h.Format == stateFormat {
		return decodePointer(root, h.Body)
	}
	return decodeBody(root, h.Format, h.Body)
}

// decodePointer checks and parses the body of a format 4 pointer.
func decodePointer(root string, body []byte) (*stateCommit, error) {
	var b stateBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%w: body: %v", errStateFile, err)
	}
	if b.Root != root {
		return nil, fmt.Errorf("%w: it holds root %q, not %q", errStateFile, b.Root, root)
	}
	if b.Zxid != 0 || b.SavedAt != nil || b.Manifest != nil || b.Left != nil || b.Items != nil || b.At != nil {
		return nil, fmt.Errorf("%w: format %d: the pointer holds only the pack's name", errStateFile, stateFormat)
	}
	if !validPackName(b.Pack) {
		return nil, fmt.Errorf("%w: pack name %q", errStateFile, b.Pack)
	}
	return &stateCommit{format: stateFormat, pack: b.Pack}, nil
}

// decodeBody checks and parses the body of a commit record (format 4) or
// of a commit file (formats 1 to 3).
func decodeBody(root string, format int, body []byte) (*stateCommit, error) {
	var b stateBody
	if err := json.Unmarshal(body, &b); err != nil {
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
	c := &stateCommit{format: format, m: m, zxid: b.Zxid, left: b.Left}
	if format != stateFormatV1 && b.Items != nil {
		return nil, fmt.Errorf("%w: format %d holds no items inline", errStateFile, format)
	}
	switch format {
	case stateFormat, stateFormatV3:
		if format == stateFormat && b.Pack != "" {
			return nil, fmt.Errorf("%w: a commit record names no pack", errStateFile)
		}
		if format == stateFormatV3 && !validPackName(b.Pack) {
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
			return nil, fmt.Errorf("%w: format %d has no pack", errStateFile, format)
		}
		return c, nil
	}
	if b.Pack != "" || b.At != nil {
		return nil, fmt.Errorf("%w: format %d has no pack", errStateFile, format)
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

// trailer returns the commit record trailer of a frame starting at
// frameStart whose body is body, in a pack keyed key.
func trailer(key []byte, frameStart int64, body []byte) []byte {
	t := make([]byte, packTrailerSize)
	copy(t, trailerMagic)
	binary.BigEndian.PutUint64(t[8:], uint64(frameStart)) // #nosec G115 -- a file offset, never negative
	binary.BigEndian.PutUint64(t[16:], uint64(len(body)))
	copy(t[24:56], trailerSum(key, t[:24], body))
	copy(t[56:], trailerEnd)
	return t
}

// trailerSum is the keyed checksum of a commit record.
func trailerSum(key, fields, body []byte) []byte {
	h := sha256.New()
	h.Write(key)
	h.Write(fields)
	h.Write(body)
	return h.Sum(nil)
}

// stateStore is a cache's persisted state. Only the cache's sync loop (and
// New, before it starts) uses it.
type stateStore struct {
	path, dir, root string
	// pack is the pack the pointer names after the last write or load
	// of this store ("" when there is none, or when it is not one this
	// store appends to: the next write starts a pack), have the offset in
	// it of each content the last commit references, key its key, and
	// end the end of the last commit record (where the next frame
	// starts).
	pack string
	have map[string]int64
	key  []byte
	end  int64
	// slack is packSlack, growth packGrowth (tests lower them).
	slack, growth int64
	// legacy: the state loaded is in an older format (converted by the
	// first write).
	legacy bool
	// swept: orphans and temporaries of earlier runs have been removed.
	swept bool
	// dirReady: the item directory exists and its entry is durable.
	dirReady bool
	// dirsSynced: both directories were synced by this process (its
	// first write does it).
	dirsSynced bool
	// crashAt, when set (tests), runs at each step of a write (the
	// step constants); an error stops the write there, as a crash would.
	crashAt atomic.Pointer[func(step string) error]
	// fsyncDir, when set (tests, before the store is used), stands in for
	// the fsync(2) of the state's directories.
	fsyncDir func(*os.File) error
	// last describes the last write (tests and benchmarks).
	last writeReport
}

// The steps of a write at which crashAt runs. An append: stepTruncated
// (only when the pack had a torn tail: cut to the last commit's end, not
// synced), stepAppended (the new contents written, not synced),
// stepRecorded (the commit record written, not synced), stepCommitted
// (the pack synced: the commit point), stepSwept. A write that starts a
// pack: stepAppended, stepRecorded, stepSynced (the pack, its entry and
// the pointer's temporary durable), stepRenamed (the pointer renamed into
// place), stepCommitted (its directory synced: the commit point),
// stepSwept (the older pack removed).
const (
	stepTruncated = "truncated"
	stepAppended  = "appended"
	stepRecorded  = "recorded"
	stepSynced    = "synced"
	stepRenamed   = "renamed"
	stepCommitted = "committed"
	stepSwept     = "swept"
	// stepRetract runs before retract removes the pointer (an error
	// there fails the removal).
	stepRetract = "retract"
)

// writeReport counts what one write did.
type writeReport struct {
	itemFiles    int   // distinct contents written to the pack
	itemBytes    int64 // bytes of them
	commitBytes  int64 // bytes of the commit record (body and trailer)
	newPack      bool  // a new pack was started
	truncated    int64 // bytes of a torn tail cut off before the append
	removedFiles int   // files of older states removed
}

func newStateStore(path, root string) *stateStore {
	return &stateStore{path: path, dir: path + itemDirSuffix, root: root, have: map[string]int64{}, slack: packSlack, growth: packGrowth}
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

// load reads the persisted state. A missing pointer (or commit file) is
// (nil, nil); every other failure wraps errStateFile and means "no
// persisted state".
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
		c, items, err = st.loadFrames(c.pack)
	case stateFormatV3:
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

// loadFrames reads the last intact commit record of the framed pack
// pack, and every content it references, and makes the pack the store's.
func (st *stateStore) loadFrames(pack string) (*stateCommit, map[string][]byte, error) {
	f, err := os.Open(filepath.Join(st.dir, pack))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: pack: %w", errStateFile, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: pack: %w", errStateFile, err)
	}
	size := fi.Size()
	hdr := make([]byte, packHeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil || string(hdr[:len(packMagic)]) != packMagic {
		return nil, nil, fmt.Errorf("%w: pack %s: no pack header (%d bytes)", errStateFile, pack, size)
	}
	key := hdr[len(packMagic):]
	limit := size
	var torn error // why the loader went back past a frame
	for {
		frameStart, bodyStart, end, body, err := lastRecord(f, key, limit)
		if err != nil {
			if torn != nil {
				return nil, nil, fmt.Errorf("%w: pack %s: %w, and no commit record before it", errStateFile, pack, torn)
			}
			return nil, nil, fmt.Errorf("%w: pack %s: %w", errStateFile, pack, err)
		}
		c, err := decodeBody(st.root, stateFormat, body)
		if err != nil {
			// Keyed: written by this store, so not a torn write.
			return nil, nil, fmt.Errorf("pack %s, commit record at %d: %w", pack, bodyStart, err)
		}
		items, tornErr, err := readContents(f, c, pack, packHeaderSize, frameStart, bodyStart)
		if err != nil {
			return nil, nil, err
		}
		if tornErr != nil {
			// Its record landed, one of its contents did not: the
			// frame before.
			torn, limit = tornErr, frameStart
			continue
		}
		st.pack, st.have, st.key, st.end = pack, c.at, bytes.Clone(key), end
		return c, items, nil
	}
}

// lastRecord finds the last intact commit record of the framed pack f
// (keyed key) that ends at or before limit: it reads backwards from limit
// for the trailer magic and returns the first trailer whose fields and
// keyed checksum hold, with the start of its frame, of its body, its end
// and its body.
func lastRecord(f *os.File, key []byte, limit int64) (frameStart, bodyStart, end int64, body []byte, err error) {
	// hi is the highest trailer start not yet looked at.
	hi := limit - packTrailerSize
	checked := 0
	for hi >= int64(packHeaderSize) {
		lo := max(int64(packHeaderSize), hi-packScanChunk+1)
		buf := make([]byte, hi-lo+int64(len(trailerMagic)))
		if _, err := f.ReadAt(buf, lo); err != nil {
			return 0, 0, 0, nil, fmt.Errorf("read: %w", err)
		}
		for n := len(buf); ; {
			i := bytes.LastIndex(buf[:n], []byte(trailerMagic))
			if i < 0 {
				break
			}
			n = i + len(trailerMagic) - 1
			if checked++; checked > maxScanCandidates {
				// A tail crafted full of magic (a published
				// content torn in its append) costs a read
				// each: the state is given up (ZooKeeper's
				// is read) rather than the start delayed.
				return 0, 0, 0, nil, fmt.Errorf("no intact commit record among the last %d candidates", maxScanCandidates)
			}
			at := lo + int64(i)
			fs, bs, b, ok := checkTrailer(f, key, at)
			if ok {
				return fs, bs, at + packTrailerSize, b, nil
			}
		}
		hi = lo - 1
	}
	return 0, 0, 0, nil, errors.New("no intact commit record")
}

// checkTrailer reports whether a trailer at off in f holds (magic,
// lengths, keyed checksum), and returns its frame's start, its body's
// start and its body.
func checkTrailer(f *os.File, key []byte, off int64) (frameStart, bodyStart int64, body []byte, ok bool) {
	t := make([]byte, packTrailerSize)
	if _, err := f.ReadAt(t, off); err != nil || string(t[:8]) != trailerMagic || string(t[56:]) != trailerEnd {
		return 0, 0, nil, false
	}
	fs, bl := binary.BigEndian.Uint64(t[8:]), binary.BigEndian.Uint64(t[16:])
	uoff := uint64(off) // #nosec G115 -- a file offset, never negative
	if bl > maxStateFile || bl > uoff || fs < uint64(packHeaderSize) || fs > uoff-bl {
		return 0, 0, nil, false
	}
	bodyStart = off - int64(bl)
	body = make([]byte, bl)
	if _, err := f.ReadAt(body, bodyStart); err != nil {
		return 0, 0, nil, false
	}
	if !bytes.Equal(t[24:56], trailerSum(key, t[:24], body)) {
		return 0, 0, nil, false
	}
	return int64(fs), bodyStart, body, true // #nosec G115 -- fs <= off, checked above
}

// readContents reads and checks every content of the commit record c of
// a frame whose contents are [frameStart, bodyStart) of the pack f, whose
// contents start at lo. A content of the frame itself that does not match
// is a torn append (torn says which); one of an earlier frame, corruption
// (an error).
func readContents(f *os.File, c *stateCommit, pack string, lo, frameStart, bodyStart int64) (items map[string][]byte, torn, err error) {
	items = make(map[string][]byte, len(c.m.Items))
	byHash := make(map[string][]byte, len(c.at))
	for _, name := range c.m.Names() {
		it := c.m.Items[name]
		if b, ok := byHash[it.SHA256]; ok {
			items[name] = b
			continue
		}
		off := c.at[it.SHA256]
		if off < lo || off+it.Size > bodyStart {
			return nil, nil, fmt.Errorf("%w: item %q: pack %s: offset %d and size %d outside its contents [%d, %d)", errStateFile, name, pack, off, it.Size, lo, bodyStart)
		}
		b := make([]byte, it.Size)
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, nil, fmt.Errorf("%w: item %q: pack %s: %w", errStateFile, name, pack, err)
		}
		if !c.m.Matches(name, b) {
			if off >= frameStart {
				return nil, fmt.Errorf("item %q: its bytes in the last commit's frame at %d do not match the manifest (a torn append, or corrupted)", name, frameStart), nil
			}
			return nil, nil, fmt.Errorf("%w: item %q: its bytes in pack %s do not match the manifest (corrupted)", errStateFile, name, pack)
		}
		byHash[it.SHA256] = b
		items[name] = b
	}
	return items, nil, nil
}

// loadPack reads and checks every content of a format 3 commit from its
// pack of bare contents. The store does not append to it: the next write
// starts a framed pack.
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
	// One frame of the whole file that is never torn: a mismatch is
	// corruption.
	items, _, err := readContents(f, c, c.pack, 0, math.MaxInt64, fi.Size())
	return items, err
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

// sweep removes every file of the item directory the current pointer does
// not name (older packs, item files of format 2, orphans of a crash or of
// a failed write, temporaries) and the pointer's temporaries.
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

// write persists s: its new contents and its commit record appended to
// the pack (or everything to a new pack, then the pointer), then an older
// pack removed. When it returns nil, s is durable. The directories are
// created with mode 0700 and every file is 0600.
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
	var order []int // one position per distinct content, in s.names order
	seen := make(map[string]struct{}, len(s.names))
	var live, fresh int64
	for i := range s.names {
		it := s.items[i].meta
		if _, ok := seen[it.SHA256]; ok {
			continue
		}
		seen[it.SHA256] = struct{}{}
		order = append(order, i)
		live += it.Size
		if _, ok := st.have[it.SHA256]; !ok || st.pack == "" {
			fresh += it.Size
		}
	}
	// The commit record's size is close to the manifest's (its offsets
	// and fields add little): live bytes too, as is one record.
	menc := s.Manifest().Encode()
	record := int64(len(menc)+24*len(order)+256) + packTrailerSize
	pack, err := st.openPack(live+record, fresh+record)
	if err != nil {
		return err
	}
	newPack := st.last.newPack
	// The frame starts at frameStart (after the header in a new pack);
	// bufs, written at writeAt one after the other, are a new pack's
	// header and the new contents: the snapshot's own slices, not copied
	// (a copy of the changed items into one buffer was the largest
	// allocation of a write, alive while the renderer staged the same
	// snapshot: docs/bench/latency-rsslive-2026-11-27).
	key, frameStart, writeAt := st.key, st.end, st.end
	var bufs [][]byte
	var n int64 // bytes in bufs
	if newPack {
		key, frameStart, writeAt = make([]byte, packKeySize), int64(packHeaderSize), 0
		_, _ = rand.Read(key)
		bufs = append(bufs, append([]byte(packMagic), key...))
		n = int64(len(bufs[0]))
	}
	at := make(map[string]int64, len(order))
	for _, i := range order {
		it := s.items[i].meta
		h := it.SHA256
		if off, ok := st.have[h]; ok && !newPack {
			at[h] = off
			continue
		}
		at[h] = writeAt + n
		if b := s.items[i].data; len(b) > 0 {
			bufs = append(bufs, b)
			n += int64(len(b))
		}
		st.last.itemFiles++
		st.last.itemBytes += it.Size
	}
	body, err := encodeRecordBody(st.root, s, menc, at, time.Now())
	if err != nil {
		_ = pack.Close()
		return err
	}
	renamed := false
	recEnd, err := st.appendFrame(pack, bufs, n, writeAt, frameStart, body, key)
	switch {
	case err != nil:
		_ = pack.Close()
	case newPack:
		st.last.commitBytes = int64(len(body)) + packTrailerSize
		renamed, err = st.commitNewPack(pack)
	default:
		st.last.commitBytes = int64(len(body)) + packTrailerSize
		err = st.commitAppend(pack)
	}
	if err != nil {
		if newPack && !renamed {
			// Nothing names it.
			_ = os.Remove(pack.Name())
		}
		return err
	}

	// Committed. What follows only frees space.
	st.pack, st.have, st.key, st.end, st.legacy = filepath.Base(pack.Name()), at, key, recEnd, false
	st.dirsSynced = true
	return st.step(stepCommitted)
}

// appendFrame writes a frame to pack: bufs (a new pack's header and the
// new contents, n bytes in all) at writeAt, then the commit record of
// body for a frame starting at frameStart, keyed key. It returns where
// the frame ends. Nothing is synced.
func (st *stateStore) appendFrame(pack *os.File, bufs [][]byte, n, writeAt, frameStart int64, body, key []byte) (int64, error) {
	if n > 0 {
		if err := writeVecAt(pack, bufs, writeAt); err != nil {
			return 0, fmt.Errorf("state file: pack: write %s: %w", pack.Name(), err)
		}
	}
	if err := st.step(stepAppended); err != nil {
		return 0, err
	}
	recAt := writeAt + n
	rec := append(bytes.Clone(body), trailer(key, frameStart, body)...)
	if _, err := pack.WriteAt(rec, recAt); err != nil {
		return 0, fmt.Errorf("state file: pack: write %s: %w", pack.Name(), err)
	}
	if err := st.step(stepRecorded); err != nil {
		return 0, err
	}
	return recAt + int64(len(rec)), nil
}

// commitAppend makes an append durable: the pack's fdatasync (which
// closes it) is the commit point. The first write of a process syncs both
// directories beside it.
func (st *stateStore) commitAppend(pack *os.File) error {
	var dirErr chan error
	if !st.dirsSynced {
		dirErr = make(chan error, 2)
		go func() { dirErr <- st.syncDir(st.dir) }()
		go func() { dirErr <- st.syncDir(filepath.Dir(st.path)) }()
	}
	err := datasyncClose(pack)
	if dirErr != nil {
		err = errors.Join(err, <-dirErr, <-dirErr)
	}
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// commitNewPack makes a new pack durable with its directory entry and a
// temporary holding the pointer to it, then renames the pointer into place
// and syncs its directory (the commit point). renamed says whether the
// pointer names the new pack (then it must stay, even on an error).
func (st *stateStore) commitNewPack(pack *os.File) (renamed bool, err error) {
	ptr, err := encodePointer(st.root, filepath.Base(pack.Name()))
	if err != nil {
		_ = pack.Close()
		return false, err
	}
	files := []*os.File{pack}
	tmp := ""
	f, err := createFile(os.CreateTemp(filepath.Dir(st.path), "."+filepath.Base(st.path)+tmpMarker+"*"))
	if err == nil {
		tmp = f.Name()
		files = append(files, f)
		err = writeAll(f, ptr)
	}
	if err != nil {
		for _, f := range files {
			_ = f.Close()
		}
		if tmp != "" {
			_ = os.Remove(tmp)
		}
		return false, fmt.Errorf("state file: %w", err)
	}
	// The fsyncs are issued together, so that they wait for the disk
	// once, not once each.
	dirErr := make(chan error, 1)
	go func() { dirErr <- st.syncDir(st.dir) }()
	errs := durable.SyncClose(files)
	errs = append(errs, <-dirErr)
	if err := errors.Join(errs...); err != nil {
		_ = os.Remove(tmp)
		return false, fmt.Errorf("state file: %w", err)
	}
	if err := st.step(stepSynced); err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	if err := os.Rename(tmp, st.path); err != nil {
		_ = os.Remove(tmp)
		return false, fmt.Errorf("state file: rename into place: %w", err)
	}
	if err := st.step(stepRenamed); err != nil {
		return true, err
	}
	if err := st.syncDir(filepath.Dir(st.path)); err != nil {
		return true, fmt.Errorf("state file: %w", err)
	}
	return true, nil
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

// openPack opens the pack a write of a generation of live bytes (contents
// and commit record), fresh of them not in the current pack, writes to:
// the current pack when there is one and it stays under growth times
// live plus the slack, cut back to its last commit's end if it is longer (a torn
// tail), else a new pack (st.last.newPack).
func (st *stateStore) openPack(live, fresh int64) (*os.File, error) {
	if st.pack != "" && st.end+fresh <= st.growth*live+st.slack {
		// Opened O_NONBLOCK (no effect on a regular file's I/O) so that
		// os does not offer it to the poller: four fcntl fewer per write.
		f, err := os.OpenFile(filepath.Join(st.dir, st.pack), os.O_WRONLY|durable.NoPoll, 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("state file: pack: %w", err)
		}
		if err == nil {
			fi, err := f.Stat()
			switch {
			case err != nil:
				_ = f.Close()
				return nil, fmt.Errorf("state file: pack: %w", err)
			case fi.Size() == st.end:
				return f, nil
			case fi.Size() > st.end:
				// A torn tail: a frame is only ever appended right
				// after an intact one (synced with the append).
				if err := f.Truncate(st.end); err != nil {
					_ = f.Close()
					return nil, fmt.Errorf("state file: pack: cut its torn tail: %w", err)
				}
				st.last.truncated = fi.Size() - st.end
				if err := st.step(stepTruncated); err != nil {
					_ = f.Close()
					return nil, err
				}
				return f, nil
			}
			// Shorter than what it committed (cut by someone
			// else): a new pack.
			_ = f.Close()
		}
		// Gone: a new pack.
	}
	f, err := createFile(os.CreateTemp(st.dir, packPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("state file: new pack: %w", err)
	}
	st.last.newPack = true
	return f, nil
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

// skipWritten returns bufs without their first n bytes, and without the
// empty buffers that then lead it. It shortens bufs's elements in place.
func skipWritten(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) > 0 {
		bufs[0] = bufs[0][n:]
	}
	return bufs
}

// writeAll writes data to f.
func writeAll(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return nil
}

// retract removes the pointer, durably, after a failed write: the state
// it names is older than the snapshot being handed out. The pack stays
// (the next successful write starts a new one and sweeps it).
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
