package render

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DataLink is the symlink inside a DirWriter directory that points at the
// timestamped directory holding the current complete set of files.
const DataLink = "..data"

// DataTmpLink is the symlink created next to DataLink and renamed over it
// to swap sets atomically. It only survives a crash between its creation
// and the rename; the next write removes it.
const DataTmpLink = "..data_tmp"

// tsLayout is the timestamp part of a generation directory name
// ("..2024_05_01_10_00_00.<random>"), the same layout Kubernetes uses so
// that operators recognise it.
const tsLayout = "2006_01_02_15_04_05"

// dirMode is the mode of timestamped directories. File modes protect the
// content; the directory only has to be traversable by consumers.
const dirMode os.FileMode = 0o755

// ErrInvalidName is returned (wrapped, with the offending name) for payload
// names that are not plain file names: empty, ".", containing "/" or NUL,
// starting with ".." (reserved for DirWriter's own entries), or longer than
// 255 bytes.
var ErrInvalidName = errors.New("invalid file name")

// ErrNotManaged is returned (wrapped, with the path) when DirWriter finds an
// entry it did not create where it needs to put its own: a regular file or
// foreign symlink under a payload name, or a "..data" that is not a
// symlink. DirWriter never deletes data it does not own.
var ErrNotManaged = errors.New("entry not managed by zkconf")

// DirWriter atomically replaces the whole set of files in a directory, with
// the algorithm of Kubernetes' AtomicWriter plus fsyncs and crash clean-up.
//
// Layout of a managed directory:
//
//	dir/..2024_05_01_10_00_00.123456789/   one complete, immutable set
//	dir/..data -> ..2024_05_01_10_00_00.123456789
//	dir/app.conf -> ..data/app.conf       one link per payload name
//
// Write (and Stage followed by Commit) proceeds as follows:
//
//  1. Validate every name: a plain file name, not empty, not ".", no "/",
//     no NUL, not starting with ".." (reserved for the entries above).
//  2. Clean up after a crash: remove a stale "..data_tmp" and timestamped
//     directories that "..data" does not point to.
//  3. readlink "..data" to find the current set. Refuse to go on if a
//     payload name exists in dir as anything but our own link.
//  4. If the current set has exactly the payload's names, contents and
//     modes (and owners, if requested), skip to step 9.
//  5. Create "..<timestamp>.<random>" (mode 0755) and write every file in
//     it with its final mode and owner; fsync each file and the directory,
//     so the set is durable before it can become visible.
//  6. (Stage only) return; the caller may run a check command against the
//     new directory. Abort removes it and leaves the old set in place.
//  7. symlink "..data_tmp" -> the new directory (relative), after removing
//     any stale "..data_tmp", then rename "..data_tmp" over "..data": the
//     atomic swap.
//  8. fsync dir, making the swap durable.
//  9. Create missing top-level links name -> ..data/name (only after the
//     swap, so that they never dangle) and remove top-level links to
//     ..data/<name> whose name is no longer in the payload; fsync dir if
//     anything changed.
//  10. Remove the previous timestamped directory.
//
// Crash safety: the set visible through "..data" is always one complete
// set, because a timestamped directory is never modified after it is
// linked and is only linked after it is complete and fsynced. A top-level
// link either points into that set or dangles (a name removed by the new
// generation, between steps 7 and 9); it never points at a partial file. A
// crash leaves at most a stale "..data_tmp" and orphan directories, which
// step 2 of the next write removes.
//
// Consumers that need a consistent set must resolve "..data" once and read
// every file through the resolved directory (ReadCurrent does that, and
// re-checks the link afterwards). Opening dir/name link by link can mix two
// generations when a swap happens in between.
//
// A DirWriter must be the only writer of its directory: it is not safe for
// concurrent use, and two DirWriters (or processes) on the same directory
// will delete each other's staged sets.
type DirWriter struct {
	dir string
}

// NewDirWriter returns a DirWriter for dir, which is created (mode 0755,
// with parents) on the first write if missing.
func NewDirWriter(dir string) *DirWriter {
	return &DirWriter{dir: filepath.Clean(dir)}
}

// Dir returns the managed directory.
func (w *DirWriter) Dir() string { return w.dir }

// Write makes files (name -> content) the complete content of the
// directory, applying opts' mode and owner to every file
// (opts.FollowSymlink is ignored). It reports whether consumers can see
// any difference: false when the set was already identical and every
// top-level link was in place. Stale entries from a previous crash are
// removed even when nothing changed.
func (w *DirWriter) Write(files map[string][]byte, opts FileOptions) (changed bool, err error) {
	current, same, err := w.prepare(files, opts)
	if err != nil {
		return false, err
	}
	if same {
		return w.finish(files, current, "")
	}
	s, err := w.stage(files, opts)
	if err != nil {
		return false, err
	}
	return s.commit(false)
}

// StagedDir is a complete, fsynced timestamped directory that is not yet
// visible through "..data". Exactly one of Commit or Abort must be called;
// Abort after Commit is a no-op, so "defer s.Abort()" is the intended
// idiom.
type StagedDir struct {
	w       *DirWriter
	files   map[string][]byte
	opts    FileOptions
	path    string
	changed bool
	done    bool
}

// Stage runs steps 1-6 of Write: it writes the complete new set into a new
// timestamped directory without making it visible, so that a check command
// can validate it first (Path). The directory is created even when nothing
// changed, so a check always has something to look at; Changed tells
// whether committing would swap anything.
//
// files must not be modified until Commit or Abort returns.
func (w *DirWriter) Stage(files map[string][]byte, opts FileOptions) (*StagedDir, error) {
	_, same, err := w.prepare(files, opts)
	if err != nil {
		return nil, err
	}
	s, err := w.stage(files, opts)
	if err != nil {
		return nil, err
	}
	s.changed = !same
	return s, nil
}

// Path returns the absolute path of the staged timestamped directory.
func (s *StagedDir) Path() string { return s.path }

// Changed reports whether, when Stage ran, the staged set differed from the
// current one. Commit re-checks.
func (s *StagedDir) Changed() bool { return s.changed }

// Commit swaps the staged set in (steps 7-10 of Write). If by now the
// current set is identical, the staged directory is discarded instead and
// only the top-level links are reconciled.
func (s *StagedDir) Commit() (changed bool, err error) {
	return s.commit(true)
}

// Abort removes the staged directory, leaving the current set untouched.
// It is idempotent and a no-op after Commit.
func (s *StagedDir) Abort() {
	if s.done {
		return
	}
	s.done = true
	_ = os.RemoveAll(s.path) // best effort: an orphan is removed by the next write
}

func (s *StagedDir) commit(recheck bool) (bool, error) {
	if s.done {
		return false, ErrAlreadyDone
	}
	w := s.w
	current, err := w.readLink()
	if err != nil {
		s.Abort()
		return false, err
	}
	if recheck && current != "" {
		same, err := dirMatches(filepath.Join(w.dir, current), s.files, s.opts)
		if err != nil {
			s.Abort()
			return false, err
		}
		if same {
			s.Abort()
			return w.finish(s.files, current, "")
		}
	}
	s.done = true
	newName := filepath.Base(s.path)
	tmpLink := filepath.Join(w.dir, DataTmpLink)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = os.RemoveAll(s.path)
		return false, fmt.Errorf("render: remove stale %s: %w", tmpLink, err)
	}
	if err := os.Symlink(newName, tmpLink); err != nil {
		_ = os.RemoveAll(s.path)
		return false, fmt.Errorf("render: %w", err)
	}
	if err := os.Rename(tmpLink, filepath.Join(w.dir, DataLink)); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(s.path)
		return false, fmt.Errorf("render: swap %s: %w", DataLink, err)
	}
	// From here on the new set is visible: report changed=true whatever
	// happens, so that the caller reloads its consumers.
	if err := syncDir(w.dir); err != nil {
		return true, err
	}
	if _, err := w.finish(s.files, newName, current); err != nil {
		return true, err
	}
	return true, nil
}

// prepare runs steps 1-4: validation, crash clean-up, readlink, conflict
// check and comparison. It returns the current generation directory's name
// ("" if none) and whether it already matches the payload.
func (w *DirWriter) prepare(files map[string][]byte, opts FileOptions) (current string, same bool, err error) {
	if err := opts.validate(); err != nil {
		return "", false, err
	}
	for name := range files {
		if err := ValidateName(name); err != nil {
			return "", false, err
		}
	}
	if err := os.MkdirAll(w.dir, dirMode); err != nil {
		return "", false, fmt.Errorf("render: %w", err)
	}
	current, err = w.readLink()
	if err != nil {
		return "", false, err
	}
	if err := w.removeStale(current, ""); err != nil {
		return "", false, err
	}
	for name := range files {
		if err := w.checkLinkSlot(name); err != nil {
			return "", false, err
		}
	}
	if current == "" {
		return "", false, nil
	}
	same, err = dirMatches(filepath.Join(w.dir, current), files, opts)
	if err != nil {
		return "", false, err
	}
	return current, same, nil
}

// stage runs step 5.
func (w *DirWriter) stage(files map[string][]byte, opts FileOptions) (s *StagedDir, err error) {
	prefix := ".." + time.Now().UTC().Format(tsLayout) + "."
	path, err := os.MkdirTemp(w.dir, prefix)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(path)
		}
	}()
	if err := os.Chmod(path, dirMode); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeNew(filepath.Join(path, name), files[name], opts); err != nil {
			return nil, err
		}
	}
	if err := syncDir(path); err != nil {
		return nil, err
	}
	return &StagedDir{w: w, files: files, opts: opts, path: path, changed: true}, nil
}

// finish runs steps 9-10: reconcile top-level links with the payload, then
// remove the previous generation directory (old, may be "").
func (w *DirWriter) finish(files map[string][]byte, current, old string) (changed bool, err error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return false, fmt.Errorf("render: %w", err)
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		name := e.Name()
		if !w.isOwnLink(name) {
			continue
		}
		if _, keep := files[name]; keep {
			present[name] = true
			continue
		}
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("render: %w", err)
		}
		changed = true
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if present[name] {
			continue
		}
		if err := os.Symlink(filepath.Join(DataLink, name), filepath.Join(w.dir, name)); err != nil {
			return changed, fmt.Errorf("render: %w", err)
		}
		changed = true
	}
	if changed {
		if err := syncDir(w.dir); err != nil {
			return changed, err
		}
	}
	if old != "" && old != current {
		if err := os.RemoveAll(filepath.Join(w.dir, old)); err != nil {
			return changed, fmt.Errorf("render: remove previous generation: %w", err)
		}
	}
	return changed, nil
}

// readLink returns the name of the directory "..data" points to, or "" if
// there is no "..data" yet.
func (w *DirWriter) readLink() (string, error) {
	link := filepath.Join(w.dir, DataLink)
	fi, err := os.Lstat(link)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return "", fmt.Errorf("render: %s: %w (not a symlink)", link, ErrNotManaged)
	}
	target, err := os.Readlink(link)
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	if !isGenerationDir(target) {
		return "", fmt.Errorf("render: %s -> %q: %w (unexpected target)", link, target, ErrNotManaged)
	}
	return target, nil
}

// removeStale removes "..data_tmp" and every timestamped directory except
// keep1 and keep2: the leftovers of a crash or of an abandoned Stage.
func (w *DirWriter) removeStale(keep1, keep2 string) error {
	if err := os.Remove(filepath.Join(w.dir, DataTmpLink)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("render: remove stale %s: %w", DataTmpLink, err)
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !isGenerationDir(name) || name == keep1 || name == keep2 {
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.dir, name)); err != nil {
			errs = append(errs, fmt.Errorf("render: remove orphan generation: %w", err))
		}
	}
	return errors.Join(errs...)
}

// checkLinkSlot makes sure dir/name is free or already our own link.
func (w *DirWriter) checkLinkSlot(name string) error {
	if w.isOwnLink(name) {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(w.dir, name)); err == nil {
		return fmt.Errorf("render: %s: %w", filepath.Join(w.dir, name), ErrNotManaged)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("render: %w", err)
	}
	return nil
}

// isOwnLink reports whether dir/name is a symlink to ..data/name, i.e. one
// that DirWriter created.
func (w *DirWriter) isOwnLink(name string) bool {
	if strings.HasPrefix(name, "..") {
		return false
	}
	target, err := os.Readlink(filepath.Join(w.dir, name))
	if err != nil {
		// Missing, not a symlink (EINVAL) or unreadable: in every case not
		// something DirWriter created, so not something it may replace or
		// delete. Callers that need to know why Lstat the entry themselves.
		return false
	}
	return target == filepath.Join(DataLink, name)
}

// dirMatches reports whether the generation directory dir holds exactly
// the payload's names, each identical in content, mode and owner.
func dirMatches(dir string, files map[string][]byte, opts FileOptions) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("render: %w", err)
	}
	if len(entries) != len(files) {
		return false, nil
	}
	for _, e := range entries {
		data, ok := files[e.Name()]
		if !ok || !e.Type().IsRegular() {
			return false, nil
		}
		same, err := sameFile(filepath.Join(dir, e.Name()), data, opts)
		if err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// writeNew creates path exclusively with data, owner and mode, and fsyncs it.
func writeNew(path string, data []byte, opts FileOptions) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("render: %w", cerr)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := applyOwnerMode(f, opts); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return nil
}

// isGenerationDir reports whether name looks like "..<timestamp>.<random>".
func isGenerationDir(name string) bool {
	rest, ok := strings.CutPrefix(name, "..")
	if !ok || len(rest) < len(tsLayout)+2 || rest[len(tsLayout)] != '.' {
		return false
	}
	_, err := time.Parse(tsLayout, rest[:len(tsLayout)])
	return err == nil
}

// ValidateName reports whether name may be used as a file name in a
// DirWriter payload (see ErrInvalidName).
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("render: %w: empty", ErrInvalidName)
	case name == ".":
		return fmt.Errorf("render: %w: %q", ErrInvalidName, name)
	case strings.HasPrefix(name, ".."):
		return fmt.Errorf("render: %w: %q starts with \"..\" (reserved)", ErrInvalidName, name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("render: %w: %q contains '/' or NUL", ErrInvalidName, name)
	case len(name) > 255:
		return fmt.Errorf("render: %w: longer than 255 bytes", ErrInvalidName)
	}
	return nil
}

// CurrentPath resolves dir/..data once and returns the absolute path of the
// generation directory it points to. Files read through the returned path
// all belong to one generation, as long as that directory still exists
// (DirWriter removes it after the next swap; re-check with CurrentPath
// after reading, as ReadCurrent does).
func CurrentPath(dir string) (string, error) {
	target, err := os.Readlink(filepath.Join(dir, DataLink))
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	if filepath.IsAbs(target) {
		return target, nil
	}
	return filepath.Join(dir, target), nil
}

// maxReadAttempts bounds ReadCurrent's retries when swaps keep racing it.
const maxReadAttempts = 10

// ReadCurrent returns the complete current set of files of a DirWriter
// directory, all from one generation.
//
// This is how consumers must read a set: resolve "..data" once, read every
// file through the resolved directory, then check that "..data" still
// points there. Reading dir/name link by link can mix two generations, and
// a set resolved just before a swap can lose files while the writer deletes
// the old directory; ReadCurrent detects both and retries (up to 10 times).
func ReadCurrent(dir string) (map[string][]byte, error) {
	var lastErr error
	for range maxReadAttempts {
		gen, err := CurrentPath(dir)
		if err != nil {
			return nil, err
		}
		files, err := readGeneration(gen)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		again, lerr := CurrentPath(dir)
		if lerr != nil {
			return nil, lerr
		}
		if err == nil && again == gen {
			return files, nil
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = errors.New("generation kept changing")
	}
	return nil, fmt.Errorf("render: read %s: no stable generation after %d attempts: %w", dir, maxReadAttempts, lastErr)
}

func readGeneration(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	files := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		files[e.Name()] = data
	}
	return files, nil
}
