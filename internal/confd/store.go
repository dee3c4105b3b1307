package confd

import (
	"errors"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
)

// KVPair is a key and its value: what get returns and gets lists, read in
// templates as .Key and .Value (memkv's KVPair).
type KVPair struct {
	Key   string
	Value string
}

// KVPairs is what gets returns. It is a named slice type, as memkv's is, and
// that matters: reverse reverses a []KVPair but hands a KVPairs back
// untouched (confd's Reverse switches on the exact type), while
// sortKVByLength accepts it and returns a plain []KVPair.
type KVPairs []KVPair

// Len is sort.Interface's: KVPairs sort by key, as gets lists them.
func (ks KVPairs) Len() int { return len(ks) }

// Less orders by key.
func (ks KVPairs) Less(i, j int) bool { return ks[i].Key < ks[j].Key }

// Swap swaps two pairs.
func (ks KVPairs) Swap(i, j int) { ks[i], ks[j] = ks[j], ks[i] }

// ErrNotExist is the cause of every "key does not exist" error (memkv's
// ErrNotExist).
var ErrNotExist = errors.New("key does not exist")

// KeyError is the error of get, getv (without a default) and everything
// else that names a missing key: "key does not exist: /x" (memkv's
// KeyError). errors.Is(err, ErrNotExist) holds.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Err.Error() + ": " + e.Key }

// Unwrap returns ErrNotExist.
func (e *KeyError) Unwrap() error { return e.Err }

// Store is the key-value store a confd template reads: absolute keys
// ("/database/host") and their values, with memkv's semantics (see the
// package documentation). It is immutable and safe for concurrent use.
type Store struct {
	m map[string]string
}

// NewStore returns a store holding a copy of kv. The keys are taken as
// they are, unnormalised, as memkv takes them: a template finds a key only
// by its exact spelling.
func NewStore(kv map[string]string) *Store {
	return &Store{m: maps.Clone(kv)}
}

// Get returns the pair stored at key, or a *KeyError (memkv Store.Get).
func (s *Store) Get(key string) (KVPair, error) {
	v, ok := s.m[key]
	if !ok {
		return KVPair{}, &KeyError{key, ErrNotExist}
	}
	return KVPair{key, v}, nil
}

// Exists reports whether key is stored (memkv Store.Exists).
func (s *Store) Exists(key string) bool {
	_, ok := s.m[key]
	return ok
}

// GetValue returns the value at key. A missing key returns the first of
// defaults when one is given (even ""; the others are ignored), else a
// *KeyError (memkv Store.GetValue). A key stored with an empty value
// returns "", not the default.
func (s *Store) GetValue(key string, defaults ...string) (string, error) {
	kv, err := s.Get(key)
	if err != nil {
		if len(defaults) > 0 {
			return defaults[0], nil
		}
		return "", err
	}
	return kv.Value, nil
}

// GetAll returns the pairs whose keys match pattern (path.Match: "*"
// stops at "/"), sorted by key; none is an empty list, not an error. A
// malformed pattern is path.ErrBadPattern, but only when the store holds
// a key to match it against (memkv Store.GetAll).
func (s *Store) GetAll(pattern string) (KVPairs, error) {
	ks := make(KVPairs, 0)
	for k, v := range s.m {
		ok, err := path.Match(pattern, k)
		if err != nil {
			return nil, err
		}
		if ok {
			ks = append(ks, KVPair{k, v})
		}
	}
	sort.Sort(ks)
	return ks, nil
}

// GetAllValues returns the values of GetAll(pattern) sorted as strings:
// by value, not by key (memkv Store.GetAllValues).
func (s *Store) GetAllValues(pattern string) ([]string, error) {
	vs := make([]string, 0)
	ks, err := s.GetAll(pattern)
	if err != nil {
		return vs, err
	}
	for _, kv := range ks {
		vs = append(vs, kv.Value)
	}
	sort.Strings(vs)
	return vs, nil
}

// List returns the sorted, distinct names one level below dir: the first
// path element after dir of every key whose parent directory is dir or
// below it, and dir's own base name when dir is itself a key (memkv
// Store.List, quirks included; see the package documentation).
func (s *Store) List(dir string) []string {
	prefix := pathToTerms(dir)
	seen := make(map[string]bool)
	for k := range s.m {
		if k == dir {
			seen[path.Base(k)] = true
			continue
		}
		if samePrefixTerms(prefix, pathToTerms(path.Dir(k))) {
			seen[strings.Split(stripKey(k, dir), "/")[0]] = true
		}
	}
	return sortedKeys(seen)
}

// ListDir returns the sorted, distinct names one level below dir that have
// keys below them: directories, not leaves (memkv Store.ListDir).
func (s *Store) ListDir(dir string) []string {
	prefix := pathToTerms(dir)
	seen := make(map[string]bool)
	for k := range s.m {
		if !strings.HasPrefix(k, dir) {
			continue
		}
		items := pathToTerms(path.Dir(k))
		if samePrefixTerms(prefix, items) && len(items)-len(prefix) >= 1 {
			seen[items[len(prefix)]] = true
		}
	}
	return sortedKeys(seen)
}

// sortedKeys is the set's names, sorted, as a non-nil list (an empty
// ls prints []).
func sortedKeys(set map[string]bool) []string {
	return append(make([]string, 0, len(set)), slices.Sorted(maps.Keys(set))...)
}

// stripKey, pathToTerms and samePrefixTerms are memkv's helpers of the same
// names: List's and ListDir's quirks come from them (the raw, uncleaned dir
// is what stripKey removes; the cleaned one is what the terms compare).
func stripKey(key, prefix string) string {
	return strings.TrimPrefix(strings.TrimPrefix(key, prefix), "/")
}

func pathToTerms(p string) []string {
	return strings.Split(path.Clean(p), "/")
}

func samePrefixTerms(prefix, test []string) bool {
	if len(test) < len(prefix) {
		return false
	}
	for i := range prefix {
		if prefix[i] != test[i] {
			return false
		}
	}
	return true
}
