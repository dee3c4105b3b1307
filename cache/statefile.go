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
	"time"

	"github.com/zkconf/zkconf/internal/manifest"
)

// The state file (WithStateFile) is one JSON document:
//
//	{
//	  "kind":     "zkconf-cache-state",
//	  "format":   1,
//	  "checksum": "<hex sha256 of the exact bytes of body>",
//	  "body": {
//	    "root":     "/config",
//	    "zxid":     4294967321,
//	    "saved_at": "2025-01-02T03:04:05Z",
//	    "manifest": { ...the generation's manifest, as published... },
//	    "items":    { "<name>": "<base64 content>", ... }
//	  }
//	}
//
// It is written to a temporary file in the same directory, fsynced, renamed
// over the old one and the directory fsynced, so a crash leaves either the
// old or the new file. On load the checksum, the root, the manifest and every
// item (size and sha256 against the manifest) are checked; a file that fails
// any check is ignored with a warning.
const (
	stateKind   = "zkconf-cache-state"
	stateFormat = 1
	// maxStateFile bounds what New reads: a config set is bounded by
	// ZooKeeper's znode sizes, so anything bigger is not ours.
	maxStateFile = 256 << 20
)

type stateHeader struct {
	Kind     string          `json:"kind"`
	Format   int             `json:"format"`
	Checksum string          `json:"checksum"`
	Body     json.RawMessage `json:"body"`
}

type stateBody struct {
	Root     string            `json:"root"`
	Zxid     int64             `json:"zxid"`
	SavedAt  time.Time         `json:"saved_at"`
	Manifest json.RawMessage   `json:"manifest"`
	Items    map[string][]byte `json:"items"`
}

// errStateFile marks a state file that exists but cannot be used.
var errStateFile = errors.New("unusable state file")

// encodeState returns the state file bytes of s.
func encodeState(root string, s *Snapshot, now time.Time) ([]byte, error) {
	body, err := json.Marshal(stateBody{
		Root:     root,
		Zxid:     s.zxid,
		SavedAt:  now.UTC(),
		Manifest: s.m.Encode(),
		Items:    s.items,
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

// decodeState checks and parses a state file for root. Every failure wraps
// errStateFile.
func decodeState(root string, data []byte) (*Snapshot, error) {
	var h stateHeader
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", errStateFile, err)
	}
	if h.Kind != stateKind {
		return nil, fmt.Errorf("%w: kind %q is not %q", errStateFile, h.Kind, stateKind)
	}
	if h.Format != stateFormat {
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
	if len(b.Items) != len(m.Items) {
		return nil, fmt.Errorf("%w: %d items for a manifest of %d", errStateFile, len(b.Items), len(m.Items))
	}
	for name, data := range b.Items {
		if !m.Matches(name, data) {
			return nil, fmt.Errorf("%w: item %q does not match the manifest", errStateFile, name)
		}
	}
	if b.Zxid <= 0 {
		return nil, fmt.Errorf("%w: zxid %d", errStateFile, b.Zxid)
	}
	items := b.Items
	if items == nil {
		items = map[string][]byte{}
	}
	return newSnapshot(m, b.Zxid, items, true), nil
}

// loadState reads path. A missing file is (nil, nil).
func loadState(path, root string) (*Snapshot, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStateFile, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read: %w", errStateFile, err)
	}
	if len(data) > maxStateFile {
		return nil, fmt.Errorf("%w: larger than %d bytes", errStateFile, maxStateFile)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty", errStateFile)
	}
	return decodeState(root, data)
}

// writeState persists s to path atomically: temporary file in the same
// directory (mode 0600), fsync, rename, fsync of the directory. The
// directory is created with mode 0700 when missing.
func writeState(path, root string, s *Snapshot) error {
	data, err := encodeState(root, s, time.Now())
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state file directory: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("state file: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("state file: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("state file: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	ok = true
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("state file: open directory for fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("state file: fsync directory %s: %w", dir, err)
	}
	return nil
}
