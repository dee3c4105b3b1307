package render

import (
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"

	"github.com/zkconf/zkconf/internal/durable"
)

// StreamSpill is the output size past which a FileStream writes to its
// temporary file instead of holding the output in memory. Below it a
// stream is Stage with the output's bytes (an unchanged output writes
// nothing, not even a temporary file); above it the output goes to the
// temporary file in chunks of this size as it is made, so a render of
// megabytes holds one chunk, not the output and the garbage of its
// growth, whose size the garbage collector's goal doubles
// (docs/bench/latency-tmplstream-2026-11-27). 256 KiB keeps the outputs
// of 20 items of up to 4 KiB in memory, as before.
const StreamSpill = 256 << 10

// FileStream is an output written as it is made, to be staged for a
// destination like Stage's data: an io.Writer that computes the output's
// Digest as it goes and, once the output passes the spill size, writes
// it to a temporary file beside the destination. Stage then returns the
// staged file (nil when the destination already holds the output), or
// Abort discards it; exactly one of them must be called. A FileStream is
// not safe for concurrent use.
type FileStream struct {
	path  string
	opts  FileOptions
	spill int
	// buf holds the output not yet written: all of it until the spill,
	// then at most one chunk.
	buf []byte
	h   maphash.Hash
	d   Digest
	// dest, f and tmp are the temporary file, once spilled.
	dest destFile
	f    *os.File
	tmp  string
	err  error // the first failure of a write: every later call returns it
	done bool
}

// NewFileStream returns a stream of an output for the file at path,
// written with opts (as Stage would). sizeHint (the previous output's
// size, or 0) sizes its buffer. The output's Digest is made under like's
// seed when like is not the zero Digest (so that it can be compared with
// like: Digest.Equal), under a new one otherwise.
func NewFileStream(path string, opts FileOptions, sizeHint int64, like Digest) *FileStream {
	return newFileStream(path, opts, sizeHint, like, StreamSpill)
}

func newFileStream(path string, opts FileOptions, sizeHint int64, like Digest, spill int) *FileStream {
	s := &FileStream{path: path, opts: opts, spill: spill}
	seed := like.seed
	if !like.set {
		seed = maphash.MakeSeed()
	}
	s.h.SetSeed(seed)
	s.d = Digest{seed: seed, set: true}
	if sizeHint > 0 {
		s.buf = make([]byte, 0, min(sizeHint, int64(spill)))
	}
	return s
}

// Write implements io.Writer. Its error (the temporary file's directory
// cannot be opened, a full disk) is the stream's: Stage returns it too.
func (s *FileStream) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.done {
		return 0, ErrAlreadyDone
	}
	if len(p) == 0 {
		return 0, nil
	}
	_, _ = s.h.Write(p) // never fails
	s.d.size += int64(len(p))
	if s.f == nil && len(s.buf)+len(p) <= s.spill {
		s.buf = append(s.buf, p...)
		return len(p), nil
	}
	if s.f == nil {
		if err := s.create(); err != nil {
			return 0, s.fail(err)
		}
	}
	if len(s.buf)+len(p) > cap(s.buf) {
		if err := s.flush(); err != nil {
			return 0, s.fail(err)
		}
	}
	if len(p) >= cap(s.buf) {
		if _, err := s.f.Write(p); err != nil {
			return 0, s.fail(fmt.Errorf("render: write %s: %w", s.tmpPath(), err))
		}
		return len(p), nil
	}
	s.buf = append(s.buf, p...)
	return len(p), nil
}

// create resolves the destination (as Stage does) and creates the
// temporary file beside it; the buffer becomes the chunk buffer.
func (s *FileStream) create() error {
	if err := s.opts.validate(); err != nil {
		return err
	}
	dest, err := resolveDest(s.path, s.opts)
	if err != nil {
		return classify(err)
	}
	f, tmp, err := durable.CreateTempIn(dest.root, dest.dir, tempPrefix(dest.name))
	if err != nil {
		dest.close()
		return fmt.Errorf("render: %w", err)
	}
	s.dest, s.f, s.tmp = dest, f, tmp
	if cap(s.buf) < s.spill {
		s.buf = append(make([]byte, 0, s.spill), s.buf...)
	}
	return nil
}

// flush writes the buffer to the temporary file.
func (s *FileStream) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	if _, err := s.f.Write(s.buf); err != nil {
		return fmt.Errorf("render: write %s: %w", s.tmpPath(), err)
	}
	s.buf = s.buf[:0]
	return nil
}

func (s *FileStream) tmpPath() string { return filepath.Join(s.dest.dir, s.tmp) }

// fail records err as the stream's and removes the temporary file.
func (s *FileStream) fail(err error) error {
	s.err = classify(err)
	s.discard()
	return s.err
}

// discard removes the temporary file, if any, and lets go of the buffer.
func (s *FileStream) discard() {
	if s.f != nil {
		_ = s.f.Close()
		_ = s.dest.root.Remove(s.tmp) // best effort: a leftover is cleaned by RemoveStaleTemps
		s.dest.close()
		s.f = nil
	}
	s.buf = nil
}

// Err returns the error a write failed with, nil if none did.
func (s *FileStream) Err() error { return s.err }

// Digest returns the Digest of what was written so far.
func (s *FileStream) Digest() Digest {
	d := s.d
	d.sum = s.h.Sum64()
	return d
}

// Abort discards the output: the temporary file is removed. It is
// idempotent and a no-op after Stage.
func (s *FileStream) Abort() {
	if s.done {
		return
	}
	s.done = true
	s.discard()
}

// Stage is StageIfChanged for the output written: it returns nil (and
// leaves nothing behind) when the destination already holds it with
// opts' mode and owner, and otherwise the staged file, fsynced, whose
// Changed is true. A spilled output was written before the comparison
// (its temporary file is removed, unsynced, when unchanged); the
// comparison reads the destination and hashes it under the output's
// Digest. The stream is done afterwards, whatever the outcome.
func (s *FileStream) Stage() (_ *StagedFile, err error) {
	if s.done {
		return nil, ErrAlreadyDone
	}
	if s.err != nil {
		s.done = true
		return nil, s.err
	}
	s.done = true
	if s.f == nil {
		data := s.buf
		s.buf = nil
		return StageIfChanged(s.path, data, s.opts)
	}
	defer func() {
		if err != nil {
			s.discard()
		}
	}()
	if err := s.flush(); err != nil {
		return nil, err
	}
	s.buf = nil
	d := s.Digest()
	fi, same, err := sameFileInfoWith(s.dest.root, s.dest.name, d.size, d.sameAs, s.opts)
	if err != nil {
		return nil, classify(err)
	}
	if same {
		s.discard()
		return nil, nil
	}
	var differs fileID
	if fi != nil {
		differs, _ = idOf(fi)
	}
	if err := applyOwnerMode(s.f, s.opts); err != nil {
		return nil, classify(fmt.Errorf("render: %w", err))
	}
	if err := s.f.Sync(); err != nil {
		return nil, classify(fmt.Errorf("render: fsync %s: %w", s.tmpPath(), err))
	}
	f := s.f
	s.f = nil // the staged file owns the temporary file and dest now
	if err := f.Close(); err != nil {
		_ = s.dest.root.Remove(s.tmp)
		s.dest.close()
		return nil, classify(fmt.Errorf("render: close %s: %w", s.tmpPath(), err))
	}
	return &StagedFile{path: s.path, dest: s.dest, tmp: s.tmp, sum: d, opts: s.opts, changed: true, differs: differs}, nil
}

// Equal reports whether d and o stand for the same content, as far as
// can be told: both made under the same seed (NewFileStream's like),
// with the same length and hash. Digests under different seeds are
// never equal.
func (d Digest) Equal(o Digest) bool {
	return d.set && o.set && d.seed == o.seed && d.size == o.size && d.sum == o.sum
}
