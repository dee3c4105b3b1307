package render

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
)

// Digest stands for a file's content without holding it: its length and a
// 64-bit hash (hash/maphash, under a seed of the Digest's own). A caller
// that must later recognise an output it wrote (drift detection) keeps a
// Digest instead of the output's bytes: a template's output can be
// megabytes, and every byte kept alive between applies also raises the
// garbage collector's goal by as much again (docs/bench/
// latency-rss64c-2026-11-27). The seed is random per Digest and never
// leaves the process, so content made to collide with a Digest cannot be
// chosen from outside; an accidental collision has a chance of 2^-64.
// The zero Digest matches nothing.
type Digest struct {
	seed maphash.Seed
	size int64
	sum  uint64
	set  bool
}

// DigestOf returns data's Digest.
func DigestOf(data []byte) Digest {
	seed := maphash.MakeSeed()
	return Digest{seed: seed, size: int64(len(data)), sum: maphash.Bytes(seed, data), set: true}
}

// Size returns the length of the content d stands for.
func (d Digest) Size() int64 { return d.size }

// IsZero reports whether d is the zero Digest (no content).
func (d Digest) IsZero() bool { return !d.set }

// Matches reports whether data is the content d stands for.
func (d Digest) Matches(data []byte) bool {
	return d.set && int64(len(data)) == d.size && maphash.Bytes(d.seed, data) == d.sum
}

// sameAs reports whether r holds exactly the content d stands for, reading
// it in chunks (no copy of the whole file in memory).
func (d Digest) sameAs(r io.Reader) (bool, error) {
	if !d.set {
		return false, nil
	}
	var h maphash.Hash
	h.SetSeed(d.seed)
	buf := make([]byte, min(32<<10, d.size+1))
	n, err := io.CopyBuffer(&h, io.LimitReader(r, d.size+1), buf)
	if err != nil {
		return false, fmt.Errorf("render: %w", err)
	}
	return n == d.size && h.Sum64() == d.sum, nil
}

// MatchesDigest is Matches for content known by its Digest: whether the
// file at path holds the content d stands for, with opts' mode and (where
// requested) owner. It writes nothing; the zero Digest matches nothing.
func MatchesDigest(path string, d Digest, opts FileOptions) (bool, error) {
	opts.CreateDirs = false // writes nothing
	dest, same, _, err := compareDestWith(path, d.size, d.sameAs, opts)
	dest.close()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // no directory yet: not in place
	}
	return same, err
}
