package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkconf/zkconf/internal/durable"
	"github.com/zkconf/zkconf/internal/errlist"
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
// the algorithm of Kubernetes' AtomicWriter plus fsyncs and crash clean-up,
// and without rewriting files that did not change.
//
// Layout of a managed directory:
//
//	dir/..2024_05_01_10_00_00.123456789/   one complete, immutable set
//	dir/..data -> ..2024_05_01_10_00_00.123456789
//	dir/app.conf -> ..data/app.conf       one link per payload name
//	dir/..pool/                           empty files for the next stage (Refill)
//
// A DirWriter remembers the generation directory it last wrote (or
// verified): for each file, the content it holds (the caller's slice, by
// reference) and its identity as lstat saw it (device, inode, size, mode,
// owner, mtime, ctime). A file whose identity is unchanged still holds that
// content, so comparing it with a new payload needs one lstat and an
// in-memory comparison, not a read. An identity recorded less than
// racyWindow (100 ms; 3 s on filesystems with coarse timestamps) after the
// file's mtime is not trusted (an edit within the same timestamp tick
// would keep the times; git calls this "racily clean"): such files, and
// every file after a restart, are compared by reading them, and recorded
// again.
//
// Write (and Stage followed by Commit) proceeds as follows:
//
//  1. Validate every name: a plain file name, not empty, not ".", no "/",
//     no NUL, not starting with ".." (reserved for the entries above).
//  2. List dir once. Clean up after a crash: remove a stale "..data_tmp"
//     and timestamped directories that "..data" does not point to, except
//     those still within their grace period (step 10). A directory this
//     DirWriter did not retire itself (left by a previous process, or by a
//     crash) is dated by the mtime of "..data", the time of the last swap,
//     and retired from then.
//  3. readlink "..data" to find the current set. Refuse to go on if a
//     payload name exists in dir as anything but our own link; note
//     missing links, and our links to names no longer in the payload.
//  4. Compare the current set with the payload, file by file: lstat only
//     where the record vouches for the file (above), content otherwise.
//     Each file identical in content, mode and owner is "kept". If every
//     payload name is kept and there is no other file, the set is the
//     same: skip to step 9 (StageIfChanged returns nil if the links need
//     nothing either).
//  5. Create "..<timestamp>.<random>" (mode 0755). Hard-link every kept
//     file from the current set (same inode: the current set is immutable
//     and was fsynced when written, so the link is as durable and nothing
//     is read or written; a flat name is one linkat, not followed by an
//     lstat), and note that the link gave the inode a new ctime (below);
//     write every other file with its final mode and
//     owner and fsync it (and write it too if linking fails, as on a
//     filesystem without hard links); a flat set's file takes, where
//     Refill made one, an empty file of "..pool", written, then linked
//     into the new directory, rather than a new inode. fsync the
//     directory, so the set is durable before it can become visible.
//  6. (Stage only) return; the caller may run a check command against the
//     new directory. Abort removes it and leaves the old set in place.
//  7. Re-check (Commit only) step 4 against the current set; if it is by
//     now identical, discard the staged directory and go to step 9.
//     symlink "..data_tmp" -> the new directory (relative), after removing
//     any stale "..data_tmp", then rename "..data_tmp" over "..data": the
//     atomic swap. The new directory's record replaces the old one.
//  8. fsync dir, making the swap durable.
//  9. Create missing top-level links name -> ..data/name (only after the
//     swap, so that they never dangle) and remove top-level links to
//     ..data/<name> whose name is no longer in the payload; fsync dir if
//     anything changed. Skipped when step 3 found every link in place and
//     none extra.
//  10. Retire the previous timestamped directory. With no grace period
//     (SetGrace, the default) remove it now; otherwise keep it, noting
//     the time of the swap, and remove it once the grace period has passed:
//     Sweep does that (the caller runs it on a timer), and so does step 2
//     of every later write. A kept file lives on through its link in the
//     new directory; whenever a previous directory is removed, note that
//     this gave the kept files a new ctime.
//
// Matches runs steps 1, 3 and 4 (and the link checks of 9) without
// writing anything, to find drift.
//
// Crash safety: the set visible through "..data" is always one complete
// set, because a timestamped directory is never modified after it is
// linked and is only linked after it is complete and fsynced; a kept file
// is an inode that was already complete and fsynced, and is never written
// again. A top-level link either points into that set or dangles (a name
// removed by the new generation, between steps 7 and 9); it never points
// at a partial file. A crash leaves at most a stale "..data_tmp" and
// orphan directories, which step 2 of the next write removes (once their
// grace period, counted from the last swap, has passed), and names in
// "..pool", which the first Refill of the next process removes: one
// linked into a generation is a second link to a complete file (the
// generation's link stays), one not linked is a pool file never taken
// again.
//
// Drift: someone editing dir/name in place edits the current set's inode,
// and also any staged set it was linked into; the edit changes the
// inode's ctime and mtime (or, through a rename, the inode), so the next
// comparison no longer trusts the record, reads the file and finds the
// difference. Our own links and unlinks change a kept inode's ctime too:
// rather than lstat every file after each, the record notes the time the
// call ended by (fileRecord.ownBy), and the next lstat that looks at the
// file anyway accepts a ctime up to then, when the inode, mtime, size,
// mode and owner are still the verified ones. A kept file replaced in the
// current set between step 4 and its link (another inode) is found by the
// next comparison of the new set, like an edit after the swap: the agent
// makes one right after every apply (MatchesCurrent).
//
// Consumers that need a consistent set must resolve "..data" once and read
// every file through the resolved directory (ReadCurrent does that, and
// re-checks the link afterwards). Opening dir/name link by link can mix two
// generations when a swap happens in between. The bound a reader gets: one
// that resolves "..data" once and then opens files relative to the
// resolved directory always sees a complete set if it has opened them
// within the grace period after the swap that replaced that directory
// (an open file stays readable after the directory goes). Without a grace
// period (0), a reader that resolved "..data" just before a swap can find
// files missing.
//
// A DirWriter must be the only writer of its directory: it is not safe for
// concurrent use, and two DirWriters (or processes) on the same directory
// will delete each other's staged sets. It keeps references to the
// payloads it is given: their contents must never be modified.
type DirWriter struct {
	dir string
	rec *genRecord // what the generation directory rec.name holds, or nil

	// grace is how long a replaced generation directory is kept for the
	// readers that resolved "..data" before the swap; retired lists the
	// directories kept, with the time they were replaced.
	grace   time.Duration
	retired []retiredDir
	// ownerSweeps: the directories this DirWriter retired are removed by
	// Sweep only, never by a write's step 2 (SetOwnerSweeps).
	ownerSweeps bool

	// linksWatched: the owner watches the managed directory and calls
	// Matches after every change there (SetLinksWatched). ownLinks holds,
	// by name, the inode number of each top-level link a readlink last
	// found to be ours, as the listing gave it; linkReads counts those
	// readlinks (for tests).
	linksWatched bool
	ownLinks     map[string]uint64
	linkReads    int

	// pool is the files Refill made ahead of the next stage (PoolDir).
	pool inodePool

	// beforeLink, when set (tests), runs before a kept file is linked
	// into a staged generation.
	beforeLink func(name string)
}

// retiredDir is a previous generation directory kept for its grace period.
type retiredDir struct {
	name string
	at   time.Time // when it stopped being current
}

// SetGrace sets how long a generation directory is kept after a swap
// replaced it, so that readers that resolved "..data" just before the swap
// still find every file of the set they resolved (see DirWriter). 0, the
// default, removes it at once; a negative d counts as 0.
func (w *DirWriter) SetGrace(d time.Duration) { w.grace = max(d, 0) }

// SetOwnerSweeps, on, leaves the retired directories whose grace period
// has passed to Sweep: a write's step 2 then removes only what this
// DirWriter did not retire itself (and nothing it knows of). An owner that
// calls Sweep right after every write removes them after the swap rather
// than before it, off the path of the next set to readers.
func (w *DirWriter) SetOwnerSweeps(on bool) { w.ownerSweeps = on }

// SetLinksWatched, on, tells the DirWriter that its owner watches the
// managed directory (inotify) and calls Matches after every change there:
// a write's preparation then takes a top-level link that a readlink found
// to be ours as still ours while the listing shows the same inode number
// under its name, rather than reading all of them every time (one
// readlink per file of the set, each write). A link replaced by another
// is a change of the directory, whose event makes the owner call Matches,
// which reads every link and forgets those it no longer finds ours; until
// then a write may miss it only if the new link took the old one's inode
// number, and then it only leaves the link as it is (a write removes or
// replaces no link without reading it). Off (the default), every link is
// read by every check.
func (w *DirWriter) SetLinksWatched(on bool) {
	w.linksWatched = on
	if !on {
		w.ownLinks = nil
	}
}

// Sweep removes the retired generation directories whose grace period has
// passed and returns how long until the next one's ends (0 when no
// directory is kept). Owners of a DirWriter with a grace period call it on
// a timer; every write also removes what has expired (step 2).
func (w *DirWriter) Sweep() (next time.Duration, err error) {
	if len(w.retired) == 0 {
		return 0, nil
	}
	now := time.Now()
	if next, due := w.nextDue(now); !due {
		// Nothing to remove yet: the directory is not opened (a sweep
		// follows every apply, while the generation just retired has
		// its whole grace period ahead).
		return next, nil
	}
	root, err := w.open(false)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	current, err := w.readLink(root)
	if err != nil {
		return 0, err
	}
	var keep []retiredDir
	var errs []error
	removed := false
	for _, r := range w.retired {
		if r.name == current {
			continue // made current again by hand: not ours to remove
		}
		if d := r.at.Add(w.grace).Sub(now); d > 0 {
			keep = append(keep, r)
			if next == 0 || d < next {
				next = d
			}
			continue
		}
		if err := root.RemoveAll(r.name); err != nil {
			// Left for step 2 of the next write.
			errs = append(errs, fmt.Errorf("render: remove previous generation: %w", pathError("remove", filepath.Join(w.dir, r.name), err)))
			continue
		}
		removed = true
	}
	w.retired = keep
	if removed {
		w.refreshCurrent(current)
	}
	return next, errlist.Join(errs...)
}

// refreshCurrent notes that removing a previous generation directory
// changed the ctime of the files of current linked from it (markOwn: the
// next lstat of each accepts it, no lstat now).
func (w *DirWriter) refreshCurrent(current string) {
	if w.rec == nil || w.rec.name != current {
		return
	}
	markOwn(w.rec.files, nil)
}

// retiredAt returns when DirWriter retired the directory name.
// nextDue reports whether a retired directory's grace period has passed
// at now, and otherwise how long until the first one's does.
func (w *DirWriter) nextDue(now time.Time) (next time.Duration, due bool) {
	for _, r := range w.retired {
		d := r.at.Add(w.grace).Sub(now)
		if d <= 0 {
			return 0, true
		}
		if next == 0 || d < next {
			next = d
		}
	}
	return next, false
}

func (w *DirWriter) retiredAt(name string) (time.Time, bool) {
	for _, r := range w.retired {
		if r.name == name {
			return r.at, true
		}
	}
	return time.Time{}, false
}

// racyWindow is how long after a file's mtime its identity can be trusted
// to change on any further edit: well above the kernel's coarse timestamp
// tick (at most 10 ms) on filesystems with sub-millisecond timestamps
// (ext4, XFS, Btrfs, tmpfs), and above the 10 ms to 2 s granularity of the
// others, recognised by an mtime that is a whole number of milliseconds.
func racyWindow(mtime time.Time) time.Duration {
	if mtime.Nanosecond()%int(time.Millisecond) != 0 {
		return 100 * time.Millisecond
	}
	return 3 * time.Second
}

// fileID is what lstat says about a file, minus the link count: equal IDs
// mean the same inode with the same size, mode, owner, modification and
// change times. Hard-linking a file and removing a link change its ctime,
// so DirWriter notes after doing either that a newer ctime may be its own
// (fileRecord.ownBy).
type fileID struct {
	dev, ino     uint64
	size         int64
	mode         fs.FileMode
	uid, gid     uint32
	mtime, ctime int64
}

// fileRecord says that a file held data when its identity was id.
type fileRecord struct {
	data    []byte
	id      fileID
	trusted bool // id can vouch for data (see racyWindow)
	// ownBy (Unix ns, 0: never) bounds this DirWriter's own links and
	// unlinks of the inode: each changes its ctime and nothing else, and
	// the kernel dates it no later than the clock read after the call.
	// A ctime newer than id's and not newer than ownBy, with every other
	// field of id unchanged, is one of ours (see sameID). The next lstat
	// that looks at the file anyway accepts it, rather than an lstat of
	// every linked file after each link and each removal of a generation.
	ownBy int64
}

// sameID reports whether id, what lstat shows now, is the file fr
// recorded: its identity, or its identity with a ctime that only this
// DirWriter's own links and unlinks can have given it (fr.ownBy). It
// returns the record with id's ctime.
//
// What this lets through is what an lstat right after each of those
// calls would have let through too: an edit that keeps the inode, the
// size, the mode, the owner and the mtime (written, then its mtime put
// back) made between the call and the clock read after it, or within the
// same tick of the kernel's coarse clock.
func sameID(fr fileRecord, id fileID) (fileRecord, bool) {
	if id == fr.id {
		return fr, true
	}
	want := fr.id
	want.ctime = id.ctime
	if fr.ownBy == 0 || id != want || id.ctime < fr.id.ctime || id.ctime > fr.ownBy {
		return fr, false
	}
	fr.id = id
	return fr, true
}

// markOwn notes in the records recs (only those also in only, unless only
// is nil) that this DirWriter linked or unlinked their inodes before now:
// see fileRecord.ownBy.
func markOwn(recs, only map[string]fileRecord) {
	now := time.Now().UnixNano()
	for name, fr := range recs {
		if _, ok := only[name]; (ok || only == nil) && fr.id != (fileID{}) {
			fr.ownBy = now
			recs[name] = fr
		}
	}
}

// genRecord records the files of one generation directory.
type genRecord struct {
	name  string
	files map[string]fileRecord
}

// NewDirWriter returns a DirWriter for dir, which is created (mode 0755,
// with parents) on the first write if missing.
//
// Every operation opens dir from "/" one component at a time without
// following a symbolic link that others could replace (as WriteFile opens
// a destination's directory: an *UntrustedLinkError, nothing written) and
// works inside the directory so opened, through an os.Root: no link
// swapped into the path, and no entry inside dir, can make it write or
// remove anything outside dir.
func NewDirWriter(dir string) *DirWriter {
	return &DirWriter{dir: filepath.Clean(dir)}
}

// Dir returns the managed directory.
func (w *DirWriter) Dir() string { return w.dir }

// open opens the managed directory (creating it and its parents, with
// create).
func (w *DirWriter) open(create bool) (*os.Root, error) {
	root, _, err := openDir(w.dir, create)
	return root, err
}

// Write makes files (name -> content) the complete content of the
// directory, applying opts' mode and owner to every file
// (opts.FollowSymlink is ignored). It reports whether consumers can see
// any difference: false when the set was already identical and every
// top-level link was in place. Stale entries from a previous crash are
// removed even when nothing changed.
func (w *DirWriter) Write(files map[string][]byte, opts FileOptions) (changed bool, err error) {
	defer func() { err = classify(err) }()
	p, err := w.prepare(files, opts)
	if err != nil {
		return false, err
	}
	if p.same {
		defer p.root.Close()
		return w.finish(p.root, files, p.current, "", p.linksOK)
	}
	s, err := w.stage(files, opts, p)
	if err != nil {
		return false, err
	}
	return s.commit(false)
}

// Matches reports whether Write would change nothing that consumers can
// see: the current set holds exactly files with opts' mode and owner, and
// every top-level link is in place. It writes nothing (stale entries of a
// crash are left for the next write) and reads only files whose identity
// changed since this DirWriter last wrote or verified them.
func (w *DirWriter) Matches(files map[string][]byte, opts FileOptions) (bool, error) {
	return w.matches(files, opts, true)
}

// MatchesCurrent is Matches for the current generation directory alone:
// it reports whether the directory "..data" points to holds exactly files
// with opts' mode and owner, and leaves the top-level links and the rest
// of the managed directory unchecked. It is the check for a caller that
// has watched the managed directory all along but not the generation
// directory a write just made (see agent's post-apply drift pass).
func (w *DirWriter) MatchesCurrent(files map[string][]byte, opts FileOptions) (bool, error) {
	return w.matches(files, opts, false)
}

// matches is Matches, with the top-level links checked only with links.
func (w *DirWriter) matches(files map[string][]byte, opts FileOptions, links bool) (bool, error) {
	if err := w.validate(files, opts); err != nil {
		return false, err
	}
	if links {
		// Every link is read below: what a write may trust from here on
		// is what this check finds (nothing, if it stops before).
		w.ownLinks = nil
	}
	root, err := w.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer root.Close()
	var entries []fs.DirEntry
	if links {
		if entries, err = readDirIn(root, "."); err != nil {
			return false, fmt.Errorf("render: %w", pathError("open", w.dir, err))
		}
	}
	current, err := w.readLink(root)
	if err != nil || current == "" {
		return false, err
	}
	if links {
		linksOK, err := w.checkLinks(root, entries, files, false)
		if err != nil || !linksOK {
			// A foreign entry in a payload slot is drift too; Write reports it.
			return false, nil
		}
	}
	same, _, err := w.matchSet(root, current, files, opts, true)
	return same, err
}

// StagedDir is a complete, fsynced timestamped directory that is not yet
// visible through "..data". Exactly one of Commit or Abort must be called;
// Abort after Commit is a no-op, so "defer s.Abort()" is the intended
// idiom.
type StagedDir struct {
	w       *DirWriter
	files   map[string][]byte
	opts    FileOptions
	root    *os.Root // the managed directory, open until Commit or Abort
	name    string   // the staged directory's name in it
	path    string   // and its path
	recs    map[string]fileRecord
	changed bool
	done    bool
	// linksOK: Stage found every top-level link in place and none extra
	// (Commit then leaves them alone, see finish).
	linksOK bool
	// base is the generation directory current when staging, and
	// baseDiffers tells that it did not hold the payload then.
	base        string
	baseDiffers bool
}

// Stage runs steps 1-6 of Write: it writes the complete new set into a new
// timestamped directory without making it visible, so that a check command
// can validate it first (Path). The directory is created even when nothing
// changed, so a check always has something to look at; Changed tells
// whether committing would change anything consumers can see.
//
// files' contents must never be modified (see DirWriter).
func (w *DirWriter) Stage(files map[string][]byte, opts FileOptions) (_ *StagedDir, err error) {
	defer func() { err = classify(err) }()
	p, err := w.prepare(files, opts)
	if err != nil {
		return nil, err
	}
	s, err := w.stage(files, opts, p)
	if err != nil {
		return nil, err
	}
	s.changed = !p.same || !p.linksOK
	return s, nil
}

// StageIfChanged is Stage for callers that have nothing to check when
// nothing would change: it returns nil, having written nothing (but the
// removal of a crash's leftovers), when Matches would report true.
func (w *DirWriter) StageIfChanged(files map[string][]byte, opts FileOptions) (_ *StagedDir, err error) {
	defer func() { err = classify(err) }()
	p, err := w.prepare(files, opts)
	if err != nil {
		return nil, err
	}
	if p.same && p.linksOK {
		_ = p.root.Close()
		return nil, nil
	}
	s, err := w.stage(files, opts, p)
	if err != nil {
		return nil, err
	}
	s.changed = true
	return s, nil
}

// Path returns the absolute path of the staged timestamped directory.
func (s *StagedDir) Path() string { return s.path }

// Changed reports whether, when Stage ran, committing would have changed
// the current set or its links. Commit re-checks.
func (s *StagedDir) Changed() bool { return s.changed }

// Commit swaps the staged set in (steps 7-10 of Write). If by now the
// current set is identical, the staged directory is discarded instead and
// only the top-level links are reconciled.
func (s *StagedDir) Commit() (changed bool, err error) {
	defer func() { err = classify(err) }()
	return s.commit(true)
}

// Abort removes the staged directory, leaving the current set untouched.
// It is idempotent and a no-op after Commit.
func (s *StagedDir) Abort() {
	if s.done {
		return
	}
	s.done = true
	defer s.root.Close()
	_ = s.root.RemoveAll(s.name) // best effort: an orphan is removed by the next write
	// Removing the links changed the ctime of the current files linked
	// into the staged set.
	if rec := s.w.rec; rec != nil && len(s.recs) > 0 {
		markOwn(rec.files, s.recs)
	}
}

func (s *StagedDir) commit(recheck bool) (bool, error) {
	if s.done {
		return false, ErrAlreadyDone
	}
	w, root := s.w, s.root
	if recheck {
		// The directory must still be the one staged into: a link
		// swapped into its path since then is refused, not written
		// through.
		same, known := stillLeadsTo(w.dir, root)
		if !known {
			now, err := w.open(false)
			if err != nil {
				s.Abort()
				return false, err
			}
			same = sameDir(now, root)
			_ = now.Close()
		}
		if !same {
			s.Abort()
			return false, fmt.Errorf("render: %s now leads to another directory than the one staged into: nothing swapped", w.dir)
		}
	}
	current, err := w.readLink(root)
	if err != nil {
		s.Abort()
		return false, err
	}
	// The set current when staging, found different then and current
	// still, could only have become the payload by edits in place of a
	// generation directory; the swap then puts identical content in its
	// place (consumers reload for nothing). Not walked again.
	if recheck && current != "" && (current != s.base || !s.baseDiffers) {
		same, _, err := w.matchSet(root, current, s.files, s.opts, true)
		if err != nil {
			s.Abort()
			return false, err
		}
		if same {
			changed, err := w.finish(root, s.files, current, "", s.linksOK)
			s.Abort()
			return changed, err
		}
	}
	s.done = true
	defer root.Close()
	// A stale "..data_tmp" (a crash's) was removed by prepare's listing;
	// one that is there by now is removed and the symlink made again.
	err = root.Symlink(s.name, DataTmpLink)
	if errors.Is(err, fs.ErrExist) {
		if err := root.Remove(DataTmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = root.RemoveAll(s.name)
			return false, fmt.Errorf("render: remove stale %w", pathError("remove", filepath.Join(w.dir, DataTmpLink), err))
		}
		err = root.Symlink(s.name, DataTmpLink)
	}
	if err != nil {
		_ = root.RemoveAll(s.name)
		return false, fmt.Errorf("render: %w", pathError("symlink", filepath.Join(w.dir, DataTmpLink), err))
	}
	if err := root.Rename(DataTmpLink, DataLink); err != nil {
		_ = root.Remove(DataTmpLink)
		_ = root.RemoveAll(s.name)
		return false, fmt.Errorf("render: swap %s: %w", DataLink, pathError("rename", filepath.Join(w.dir, DataLink), err))
	}
	w.rec = &genRecord{name: s.name, files: s.recs}
	// From here on the new set is visible: report changed=true whatever
	// happens, so that the caller reloads its consumers.
	if err := syncDirIn(root, ".", w.dir); err != nil {
		return true, err
	}
	if _, err := w.finish(root, s.files, s.name, current, s.linksOK); err != nil {
		return true, err
	}
	if current != "" && w.grace == 0 {
		// Removing the previous set changed the ctime of every file
		// linked from it. A set kept for its grace period still holds
		// its links: the ctimes change when Sweep (or a later write)
		// removes it, and that marks the record then.
		markOwn(s.recs, nil)
	}
	return true, nil
}

// prepared is what steps 1-4 found.
type prepared struct {
	root    *os.Root              // the managed directory, open (the caller closes it)
	real    string                // its path, symbolic links followed
	current string                // current generation directory, "" if none
	same    bool                  // current holds exactly the payload
	linksOK bool                  // every top-level link is in place, none extra
	keep    map[string]fileRecord // current's files identical to the payload's
}

func (w *DirWriter) validate(files map[string][]byte, opts FileOptions) error {
	if err := opts.validate(); err != nil {
		return err
	}
	for name := range files {
		if err := ValidatePath(name); err != nil {
			return err
		}
	}
	for name := range files {
		for _, d := range payloadDirsOf(name) {
			if _, isFile := files[d]; isFile {
				return fmt.Errorf("render: %w: %q is both a file and the directory of %q", ErrInvalidName, d, name)
			}
		}
	}
	return nil
}

// prepare runs steps 1-4: validation, crash clean-up, readlink, link
// checks and comparison. Unless it fails, p.root is open: the caller
// closes it, or hands it to a StagedDir.
func (w *DirWriter) prepare(files map[string][]byte, opts FileOptions) (p prepared, err error) {
	if err := w.validate(files, opts); err != nil {
		return p, err
	}
	if p.root, p.real, err = openDir(w.dir, true); err != nil {
		return p, err
	}
	defer func() {
		if err != nil {
			_ = p.root.Close()
		}
	}()
	p.current, err = w.readLink(p.root)
	if err != nil {
		return p, err
	}
	entries, err := readDirIn(p.root, ".")
	if err != nil {
		return p, fmt.Errorf("render: %w", pathError("open", w.dir, err))
	}
	if err := w.removeStale(p.root, entries, p.current); err != nil {
		return p, err
	}
	p.linksOK, err = w.checkLinks(p.root, entries, files, w.linksWatched)
	if err != nil {
		return p, err
	}
	if p.current == "" {
		return p, nil
	}
	p.same, p.keep, err = w.matchSet(p.root, p.current, files, opts, false)
	return p, err
}

// checkLinks checks the top-level entries (a listing of dir) against the
// payload: it fails with ErrNotManaged if a payload name is taken by
// anything but our own link, and reports whether every payload name has
// its link and no link of ours is left for a name not in the payload.
// With trust, a link listed with the inode number it had when a readlink
// last found it ours is not read again (SetLinksWatched). The links found
// ours become the record of the next check, when the owner watches them.
func (w *DirWriter) checkLinks(root *os.Root, entries []fs.DirEntry, files map[string][]byte, trust bool) (ok bool, err error) {
	ok = true
	seen := 0
	tops := topNames(files)
	var own map[string]uint64
	if w.linksWatched {
		own = make(map[string]uint64, len(tops))
		defer func() { w.ownLinks = own }()
	}
	for _, e := range entries {
		name := e.Name()
		want := tops[name]
		if e.Type()&fs.ModeSymlink == 0 {
			if want {
				return false, fmt.Errorf("render: %s: %w", filepath.Join(w.dir, name), ErrNotManaged)
			}
			continue
		}
		ino := entryIno(e)
		var isOwn bool
		switch prev, known := w.ownLinks[name]; {
		case strings.HasPrefix(name, ".."):
			// "..data", "..data_tmp": never a payload name (isOwnLink).
		case trust && known && ino != 0 && prev == ino:
			isOwn = true
		default:
			w.linkReads++
			isOwn = isOwnLink(root, name)
		}
		if isOwn && own != nil && ino != 0 {
			own[name] = ino
		}
		switch {
		case want && isOwn:
			seen++
		case want:
			return false, fmt.Errorf("render: %s: %w", filepath.Join(w.dir, name), ErrNotManaged)
		case isOwn:
			ok = false // ours, for a name no longer in the payload
		}
	}
	return ok && seen == len(tops), nil
}

// matchSet compares generation directory gen with the payload. It reports
// whether gen holds exactly the payload (its files, and its
// sub-directories with opts' directory mode and owner), and which of its
// files hold their payload content (with their records). With quick, it
// stops at the first difference. What it learns becomes the record of
// gen. Sub-directories are entered one at a time, each opened by name in
// the one before without following a link (a link found where a
// directory should be is a difference, never followed).
func (w *DirWriter) matchSet(root *os.Root, gen string, files map[string][]byte, opts FileOptions, quick bool) (same bool, keep map[string]fileRecord, err error) {
	dirs := payloadDirs(files)
	// gen opened once: each file is then one system call away, not an
	// open of gen per file. A flat payload's gen as one bare descriptor
	// (flatDir), a tree's as an os.Root that sub-directories are opened
	// in.
	var groot *os.Root
	var flat *flatDir
	if len(dirs) == 0 {
		flat, err = openFlat(root, gen)
	}
	if flat == nil {
		groot, err = root.OpenRoot(gen)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("render: %w", pathError("open", filepath.Join(w.dir, gen), err))
	}
	if flat != nil {
		defer flat.close()
	} else {
		defer func() { _ = groot.Close() }()
	}
	var old map[string]fileRecord
	if w.rec != nil && w.rec.name == gen {
		old = w.rec.files
	}
	same = true
	keep = make(map[string]fileRecord, len(files))
	// The new record of gen: keep, plus files still vouched for that
	// differ from this payload (a check that is aborted leaves them).
	rec := make(map[string]fileRecord, len(files))
	defer func() {
		// A quick pass that stopped early saw only part of gen: keep
		// the old record then.
		if err == nil && (same || !quick) {
			w.rec = &genRecord{name: gen, files: rec}
		}
	}()
	seenFiles, seenDirs := 0, 0
	// walk compares the directory rel of gen, open as r (or, gen itself
	// of a flat payload, as flat).
	var walk func(r *os.Root, flat *flatDir, rel string) error
	walk = func(r *os.Root, flat *flatDir, rel string) error {
		var entries []fs.DirEntry
		var in entryDir = rootDir{r}
		if flat != nil {
			entries, err = flat.list()
			in = flat
		} else {
			entries, err = readDirIn(r, ".")
		}
		if err != nil {
			return fmt.Errorf("render: %w", pathError("open", filepath.Join(w.dir, gen, rel), err))
		}
		for _, e := range entries {
			if quick && !same {
				return nil
			}
			p := path.Join(rel, e.Name())
			switch {
			case e.IsDir():
				if !dirs[p] {
					same = false
					continue
				}
				seenDirs++
				sub, ok, err := openSubdir(r, e.Name(), opts)
				if err != nil {
					return err
				}
				if !ok {
					same = false
				}
				if sub == nil {
					continue
				}
				err = walk(sub, nil, p)
				_ = sub.Close()
				if err != nil {
					return err
				}
			case e.Type().IsRegular():
				data, ok := files[p]
				if !ok {
					same = false
					continue
				}
				seenFiles++
				fr, match, err := checkFile(in, e.Name(), old[p], data, opts)
				if err != nil {
					return err
				}
				if fr.trusted || match {
					rec[p] = fr
				}
				if !match {
					same = false
					continue
				}
				keep[p] = fr
			default:
				same = false
			}
		}
		return nil
	}
	if err := walk(groot, flat, ""); err != nil {
		return false, nil, err
	}
	same = same && seenFiles == len(files) && seenDirs == len(dirs)
	return same, keep, nil
}

// openSubdir opens the sub-directory name of r (listed as a directory)
// without following a link: the directory opened must be the one lstat
// sees there. ok reports whether it has opts' directory mode and owner;
// sub is nil (and ok false) when it is not a directory by now.
func openSubdir(r *os.Root, name string, opts FileOptions) (sub *os.Root, ok bool, err error) {
	fi, err := r.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("render: %w", err)
	}
	if !fi.IsDir() {
		return nil, false, nil
	}
	sub, err = r.OpenRoot(name)
	if err != nil {
		return nil, false, fmt.Errorf("render: %w", err)
	}
	if st, err := sub.Stat("."); err != nil || !os.SameFile(fi, st) {
		// Swapped for something else (a link) since the lstat.
		_ = sub.Close()
		return nil, false, nil
	}
	return sub, dirAttrsMatch(fi, opts), nil
}

// dirAttrsMatch reports whether fi, a directory, has opts' directory mode
// and (where requested) owner.
func dirAttrsMatch(fi fs.FileInfo, opts FileOptions) bool {
	return fi.Mode()&modeBits == opts.dirMode() && ownerMatches(fi, opts)
}

// ValidatePath reports whether p may be a path in a DirWriter payload:
// ValidateName's names joined by "/", relative, with no empty component.
func ValidatePath(p string) error {
	if p == "" || p[0] == '/' || p[len(p)-1] == '/' {
		return fmt.Errorf("render: %w: %q is not a relative path of names", ErrInvalidName, p)
	}
	for c := range strings.SplitSeq(p, "/") {
		if err := ValidateName(c); err != nil {
			return fmt.Errorf("render: %w: path %q: %s", ErrInvalidName, p, strings.TrimPrefix(err.Error(), "render: "+ErrInvalidName.Error()+": "))
		}
	}
	return nil
}

// payloadDirsOf returns the directories of path p, parent first.
func payloadDirsOf(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// payloadDirs is the set of directories of a payload's paths.
func payloadDirs(files map[string][]byte) map[string]bool {
	dirs := map[string]bool{}
	for name := range files {
		for _, d := range payloadDirsOf(name) {
			dirs[d] = true
		}
	}
	return dirs
}

// topNames is the set of a payload's top-level names: its flat files and
// the first component of its paths, each one link in the managed
// directory.
func topNames(files map[string][]byte) map[string]bool {
	tops := make(map[string]bool, len(files))
	for name := range files {
		top, _, _ := strings.Cut(name, "/")
		tops[top] = true
	}
	return tops
}

// checkFile reports whether the file name of root holds data with opts'
// mode and owner, and returns its record if so (or the old record, if it
// still vouches for the file's other content). A trusted record whose
// identity lstat still sees vouches for the content; otherwise the file is
// read. So is the file of an untrusted record (written less than
// racyWindow ago) when data is what the record says it held, but not
// when data differs from that: the file then holds what was written,
// which is not data, unless an edit within the same timestamp tick kept
// its identity, and only an edit that wrote exactly data would make it
// match. Reading every file of a set that changed completely for that
// (issue 27's 20/20 and 100/100: each file written by one apply, read back
// by the next) is not worth it: a missed match costs a new file with the
// same content, never a wrong one.
func checkFile(root entryDir, name string, old fileRecord, data []byte, opts FileOptions) (fileRecord, bool, error) {
	if old.trusted || (old.id != (fileID{}) && !sameBytes(old.data, data)) {
		fi, err := root.lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return fileRecord{}, false, nil
		}
		if err != nil {
			return fileRecord{}, false, fmt.Errorf("render: %w", err)
		}
		if id, ok := idOf(fi); ok {
			if cur, same := sameID(old, id); same {
				if !old.trusted || !attrsMatch(fi, opts) || !sameBytes(old.data, data) {
					return cur, false, nil
				}
				// Keep the caller's slice: the old one may belong to a
				// payload the caller is about to drop.
				return fileRecord{data: data, id: id, trusted: true, ownBy: cur.ownBy}, true, nil
			}
		}
	}
	now := time.Now()
	fi, same, err := root.sameFile(name, data, opts)
	if err != nil || !same {
		return fileRecord{}, false, err
	}
	id, ok := idOf(fi)
	return fileRecord{data: data, id: id, trusted: ok && now.Sub(fi.ModTime()) > racyWindow(fi.ModTime())}, true, nil
}

// entryDir is a directory checkFile looks at files in: an os.Root
// (rootDir), or a flat generation directory's bare descriptor (flatDir).
type entryDir interface {
	lstat(name string) (fs.FileInfo, error)
	sameFile(name string, data []byte, opts FileOptions) (fs.FileInfo, bool, error)
}

// rootDir is an entryDir through an os.Root.
type rootDir struct{ r *os.Root }

func (d rootDir) lstat(name string) (fs.FileInfo, error) { return d.r.Lstat(name) }
func (d rootDir) sameFile(name string, data []byte, opts FileOptions) (fs.FileInfo, bool, error) {
	return sameFileInfo(d.r, name, data, opts)
}

// sameBytes is bytes.Equal that skips the comparison for two views of the
// same memory (the same item of two snapshots).
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return bytes.Equal(a, b)
}

// stage runs step 5. The StagedDir takes p.root over (closed on an
// error).
func (w *DirWriter) stage(files map[string][]byte, opts FileOptions, p prepared) (s *StagedDir, err error) {
	root := p.root
	prefix := ".." + time.Now().UTC().Format(tsLayout) + "."
	name, err := mkdirTemp(root, prefix)
	if err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("render: %w", pathError("mkdir", filepath.Join(w.dir, prefix+"*"), err))
	}
	defer func() {
		if err != nil {
			_ = root.RemoveAll(name)
			_ = root.Close()
		}
	}()
	if err := root.Chmod(name, dirMode); err != nil {
		return nil, fmt.Errorf("render: %w", pathError("chmod", filepath.Join(w.dir, name), err))
	}
	// Sub-directories, parent first, 0700 until every file is in place:
	// nobody but this process can put anything into them meanwhile.
	subdirs := slices.Sorted(maps.Keys(payloadDirs(files)))
	for _, d := range subdirs {
		if err := root.Mkdir(path.Join(name, d), 0o700); err != nil {
			return nil, fmt.Errorf("render: %w", pathError("mkdir", filepath.Join(w.dir, name, d), err))
		}
	}
	recs := make(map[string]fileRecord, len(files))
	var write []string // the files not linked from the current set
	ln := newLinker(root, p.current, name, len(p.keep) > 0)
	defer ln.close()
	for _, f := range slices.Sorted(maps.Keys(files)) {
		rel := path.Join(name, f)
		if fr, ok := p.keep[f]; ok {
			// The current set is immutable: share its inode. Any error
			// (EXDEV, EPERM, no hard links here) just means writing.
			if w.beforeLink != nil {
				w.beforeLink(f)
			}
			if ln.link(f) == nil {
				if !ln.direct(f) {
					// A path, linked through root: its directories
					// in the current set could have changed since the
					// comparison, so the inode linked must be the one
					// compared, or it is written instead.
					fi, err := ln.lstat(f)
					if err != nil || !sameInode(fi, fr) {
						if err := root.Remove(rel); err != nil {
							return nil, fmt.Errorf("render: %w", pathError("remove", filepath.Join(w.dir, rel), err))
						}
						write = append(write, f)
						continue
					}
				}
				// The link changed the inode's ctime (both names are
				// the same inode): the next lstat of either accepts it
				// (markOwn). A flat name is linked by linkat between
				// the two directories, opened after the comparison,
				// and not lstat'ed again here: a file replaced in the
				// current set between the comparison and the link is
				// another inode than the record's, which the next
				// comparison of the new set (the agent's check right
				// after the apply, or the next write) reads and
				// finds different, as it finds a file edited after
				// the swap.
				fr.ownBy = time.Now().UnixNano()
				recs[f] = fr
				if w.rec != nil && w.rec.name == p.current {
					w.rec.files[f] = fr
				}
				continue
			}
		}
		write = append(write, f)
	}
	// Written first, then fsynced together, so that they wait for the
	// disk once, not once each (durable.SyncClose); nothing is visible
	// before the swap.
	// The directory's fsync (its entries: the files and the hard links)
	// goes beside the last batch's. With sub-directories, every directory
	// is fsynced after the last batch, once each has its final mode and
	// owner.
	flat := len(subdirs) == 0
	var at *os.File // bare descriptors for flat names only: a path goes through root
	if flat {
		at = ln.toDir
	}
	// The pool (Refill) serves the files written through bare
	// descriptors; it is sized by what this stage writes.
	var pool *poolDraw
	if at != nil && bareCreate(opts) {
		w.pool.want = min(len(write), maxPool)
		w.pool.mode = poolMode(opts)
		if len(write) > 0 && len(w.pool.free) > 0 {
			if pool = drawPool(root, w.pool.free); pool != nil {
				defer func() {
					w.pool.took(pool, name)
					pool.close()
				}()
			} else {
				// Not as Refill left it: its files are forgotten (a
				// new DirWriter's first Refill removes them).
				w.pool.free, w.pool.ready = nil, false
			}
		}
	} else {
		w.pool.want = 0
	}
	for start := 0; start < len(write); start += durable.Batch {
		last := start+durable.Batch >= len(write)
		var in *os.Root // created through root: in to, opened once
		if at == nil || !bareCreate(opts) {
			in = ln.toRootOpen()
		}
		if err := writeBatch(root, in, at, name, write[start:min(start+durable.Batch, len(write))], files, opts, recs, last && flat, pool); err != nil {
			return nil, err
		}
	}
	if !flat {
		if err := w.finishSubdirs(root, name, subdirs, opts); err != nil {
			return nil, err
		}
	} else if len(write) == 0 {
		if err := syncDirIn(root, name, filepath.Join(w.dir, name)); err != nil {
			return nil, err
		}
	}
	return &StagedDir{w: w, files: files, opts: opts, root: root, name: name, path: filepath.Join(p.real, name), recs: recs, changed: true, linksOK: p.linksOK,
		base: p.current, baseDiffers: p.current != "" && !p.same}, nil
}

// finishSubdirs gives the sub-directories of the staged generation name
// their mode and owner and fsyncs them and name together.
func (w *DirWriter) finishSubdirs(root *os.Root, name string, subdirs []string, opts FileOptions) error {
	for _, d := range subdirs {
		rel := path.Join(name, d)
		if err := root.Chmod(rel, opts.dirMode()); err != nil {
			return fmt.Errorf("render: %w", pathError("chmod", filepath.Join(w.dir, rel), err))
		}
		if opts.UID != -1 || opts.GID != -1 {
			if err := root.Lchown(rel, opts.UID, opts.GID); err != nil {
				return fmt.Errorf("render: %w", pathError("chown", filepath.Join(w.dir, rel), err))
			}
		}
	}
	errs := make([]error, len(subdirs)+1)
	var wg sync.WaitGroup
	for i, d := range append([]string{""}, subdirs...) {
		rel := path.Join(name, d)
		wg.Go(func() { errs[i] = syncDirIn(root, rel, filepath.Join(w.dir, rel)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sameInode reports whether fi (an lstat) is the inode of the record fr
// (a record without an identity vouches for nothing: true).
func sameInode(fi fs.FileInfo, fr fileRecord) bool {
	if fr.id == (fileID{}) {
		return true
	}
	id, ok := idOf(fi)
	return !ok || (id.dev == fr.id.dev && id.ino == fr.id.ino)
}

// linker hard-links files of generation directory from into generation
// directory to, both in root. With both directories open, a flat name is
// one linkat and one lstat (rather than opening each directory around
// every link and every lstat: eleven system calls a file); a path in a
// tree, or a platform without linkat, goes through root.
type linker struct {
	root           *os.Root
	from, to       string
	fromDir, toDir *os.File // nil: link through root
	toRoot         *os.Root // nil: lstat through root (see toRootOpen)
	toRootTried    bool
	noLinkat       bool // linkat is not supported here: link through root
}

// newLinker opens what it can of from and to (with links false, to
// only: nothing will be linked, and the files written go into to).
func newLinker(root *os.Root, from, to string, links bool) *linker {
	l := &linker{root: root, from: from, to: to}
	// to as a file, for linkat and for writing its new files through bare
	// descriptors (writeBatch).
	if td, err := root.OpenFile(to, os.O_RDONLY|durable.NoPoll, 0); err == nil {
		l.toDir = td
	}
	if !links || l.toDir == nil {
		return l
	}
	if fd, err := root.OpenFile(from, os.O_RDONLY|durable.NoPoll, 0); err == nil {
		l.fromDir = fd
	}
	return l
}

// link links name of from to name of to.
func (l *linker) link(name string) error {
	if l.direct(name) {
		if err := linkAt(l.fromDir, l.toDir, name); !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		l.noLinkat = true
	}
	return l.root.Link(path.Join(l.from, name), path.Join(l.to, name))
}

// direct reports whether name is linked between the two open directories
// (one linkat of a flat name), not through root.
func (l *linker) direct(name string) bool {
	return l.fromDir != nil && l.toDir != nil && !l.noLinkat && !strings.Contains(name, "/")
}

// lstat lstats name of to.
func (l *linker) lstat(name string) (fs.FileInfo, error) {
	if r := l.toRootOpen(); r != nil {
		return r.Lstat(name)
	}
	return l.root.Lstat(path.Join(l.to, name))
}

// toRootOpen returns to as an os.Root, opened on first use (a flat set
// written through bare descriptors never needs it), or nil.
func (l *linker) toRootOpen() *os.Root {
	if l.toRoot == nil && !l.toRootTried {
		l.toRootTried = true
		if r, err := l.root.OpenRoot(l.to); err == nil {
			l.toRoot = r
		}
	}
	return l.toRoot
}

func (l *linker) close() {
	for _, f := range []*os.File{l.fromDir, l.toDir} {
		if f != nil {
			_ = f.Close()
		}
	}
	if l.toRoot != nil {
		_ = l.toRoot.Close()
	}
}

// mkdirTemp creates a directory named prefix and random digits in root
// (mode 0700, as os.MkdirTemp) and returns its name.
func mkdirTemp(root *os.Root, prefix string) (string, error) {
	for try := 0; ; try++ {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		err := root.Mkdir(name, 0o700)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) || try >= 10000 {
			return "", err
		}
	}
}

// finish runs steps 9-10: reconcile top-level links with the payload, then
// remove the previous generation directory (old, may be ""). linksOK says
// that the listing of this write (prepare) found every link in place and
// none extra: the links are then left as they are, which spares a
// readlink of every one of them. A link changed since that listing is a
// change made during the write, no different from one made just after it
// (drift, for the caller to repair).
func (w *DirWriter) finish(root *os.Root, files map[string][]byte, current, old string, linksOK bool) (changed bool, err error) {
	if !linksOK {
		if changed, err = w.reconcileLinks(root, files); err != nil {
			return changed, err
		}
	}
	if old != "" && old != current {
		if w.grace > 0 {
			w.retired = append(w.retired, retiredDir{name: old, at: time.Now()})
			return changed, nil
		}
		if err := root.RemoveAll(old); err != nil {
			return changed, fmt.Errorf("render: remove previous generation: %w", pathError("remove", filepath.Join(w.dir, old), err))
		}
	}
	return changed, nil
}

// reconcileLinks is step 9: the top-level links made to match the
// payload (created where missing, ours for names not in it removed),
// then the directory fsynced if anything changed.
func (w *DirWriter) reconcileLinks(root *os.Root, files map[string][]byte) (changed bool, err error) {
	entries, err := readDirIn(root, ".")
	if err != nil {
		return false, fmt.Errorf("render: %w", pathError("open", w.dir, err))
	}
	tops := topNames(files)
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		name := e.Name()
		if e.Type()&fs.ModeSymlink == 0 || !isOwnLink(root, name) {
			continue
		}
		if tops[name] {
			present[name] = true
			continue
		}
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("render: %w", pathError("remove", filepath.Join(w.dir, name), err))
		}
		changed = true
	}
	for _, name := range slices.Sorted(maps.Keys(tops)) {
		if present[name] {
			continue
		}
		if err := root.Symlink(path.Join(DataLink, name), name); err != nil {
			return changed, fmt.Errorf("render: %w", pathError("symlink", filepath.Join(w.dir, name), err))
		}
		changed = true
	}
	if changed {
		if err := syncDirIn(root, ".", w.dir); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// readLink returns the name of the directory "..data" points to, or "" if
// there is no "..data" yet.
func (w *DirWriter) readLink(root *os.Root) (string, error) {
	link := filepath.Join(w.dir, DataLink)
	// readlink alone (one system call, several times an apply); an lstat
	// only to say why it failed.
	target, err := root.Readlink(DataLink)
	if err != nil {
		fi, lerr := root.Lstat(DataLink)
		switch {
		case errors.Is(lerr, fs.ErrNotExist):
			return "", nil
		case lerr != nil:
			return "", fmt.Errorf("render: %w", pathError("lstat", link, lerr))
		case fi.Mode()&os.ModeSymlink == 0:
			return "", fmt.Errorf("render: %s: %w (not a symlink)", link, ErrNotManaged)
		}
		return "", fmt.Errorf("render: %w", pathError("readlink", link, err))
	}
	if !isGenerationDir(target) {
		return "", fmt.Errorf("render: %s -> %q: %w (unexpected target)", link, target, ErrNotManaged)
	}
	return target, nil
}

// removeStale removes "..data_tmp" and every timestamped directory except
// current and those within their grace period: the leftovers of a crash or
// of an abandoned Stage, and previous generations whose grace period
// passed. entries is a listing of dir.
func (w *DirWriter) removeStale(root *os.Root, entries []fs.DirEntry, current string) error {
	var errs []error
	now := time.Now()
	// The last swap, for directories of unknown age: looked up when the
	// first one is met (most listings hold none).
	var swapped time.Time
	swappedRead := false
	lastSwap := func() time.Time {
		if !swappedRead {
			swappedRead = true
			if fi, err := root.Lstat(DataLink); err == nil {
				swapped = fi.ModTime()
			}
		}
		return swapped
	}
	removed := false
	defer func() {
		if removed {
			w.refreshCurrent(current)
		}
	}()
	for _, e := range entries {
		name := e.Name()
		if name == DataTmpLink {
			if err := root.Remove(DataTmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("render: remove stale %s: %w", DataTmpLink, pathError("remove", filepath.Join(w.dir, DataTmpLink), err))
			}
			continue
		}
		if !e.IsDir() || !isGenerationDir(name) || name == current {
			continue
		}
		if w.grace > 0 {
			at, known := w.retiredAt(name)
			if known && w.ownerSweeps {
				continue // Sweep's, after the swap
			}
			if !known && !lastSwap().IsZero() {
				// Not retired by this DirWriter (an earlier process's,
				// or a crash's): at most as old as the last swap.
				at, known = lastSwap(), true
				w.retired = append(w.retired, retiredDir{name: name, at: at})
			}
			if known && now.Before(at.Add(w.grace)) {
				continue
			}
		}
		if err := root.RemoveAll(name); err != nil {
			errs = append(errs, fmt.Errorf("render: remove orphan generation: %w", pathError("remove", filepath.Join(w.dir, name), err)))
			continue
		}
		w.retired = slices.DeleteFunc(w.retired, func(r retiredDir) bool { return r.name == name })
		removed = true
	}
	return errlist.Join(errs...)
}

// isOwnLink reports whether the entry name of root is a symlink to
// ..data/name, i.e. one that DirWriter created.
func isOwnLink(root *os.Root, name string) bool {
	if strings.HasPrefix(name, "..") {
		return false
	}
	target, err := root.Readlink(name)
	if err != nil {
		// Missing, not a symlink (EINVAL) or unreadable: in every case not
		// something DirWriter created, so not something it may replace or
		// delete. Callers that need to know why Lstat the entry themselves.
		return false
	}
	return target == path.Join(DataLink, name)
}

// writeBatch creates the files names in the directory dir of root (their
// content in files, with owner and mode), fsyncs them together, with dir
// itself when withDir (every entry of dir exists by then), closes them and
// records them in recs. in, when not nil, is dir opened: each file is
// then created by its name in it, without an open of dir around it. On
// an error the caller removes dir.
//
// at, when not nil, is dir opened as a file: where bareCreate allows,
// the files are then written through bare descriptors (writeBatchAt),
// taking pool's files first (nil: none).
func writeBatch(root, in *os.Root, at *os.File, dir string, names []string, files map[string][]byte, opts FileOptions, recs map[string]fileRecord, withDir bool, pool *poolDraw) (err error) {
	if at != nil && bareCreate(opts) {
		ids, err := writeBatchAt(at, dir, names, files, opts, withDir, pool)
		if err != nil {
			return err
		}
		for i, name := range names {
			// Just written: not trusted until racyWindow has passed.
			recs[name] = fileRecord{data: files[name], id: ids[i]}
		}
		return nil
	}
	open := make([]*os.File, len(names))
	defer func() {
		if err != nil {
			for _, f := range open {
				if f != nil {
					_ = f.Close() // may be closed already; irrelevant then
				}
			}
		}
	}()
	for i, name := range names {
		if in != nil {
			open[i], err = createNew(in, name, files[name], opts)
		} else {
			open[i], err = createNew(root, path.Join(dir, name), files[name], opts)
		}
		if err != nil {
			return err
		}
	}
	ids := make([]fileID, len(names))
	for i, f := range open {
		// Before the close: the identity of the file written.
		if fi, err := f.Stat(); err == nil {
			ids[i], _ = idOf(fi)
		}
	}
	var dirErr chan error
	if withDir {
		dirErr = make(chan error, 1)
		go func() { dirErr <- syncDirIn(root, dir, dir) }()
	}
	errs := durable.SyncClose(open)
	if dirErr != nil {
		if err := <-dirErr; err != nil {
			return err
		}
	}
	if err := errlist.Join(errs...); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	for i, name := range names {
		// Just written: not trusted until racyWindow has passed.
		recs[name] = fileRecord{data: files[name], id: ids[i]}
	}
	return nil
}

// createNew creates the file name of root exclusively with data, owner
// and mode, and returns it open and not yet fsynced. On an error nothing
// is left open (the file itself is removed with its directory by the
// caller).
func createNew(root *os.Root, name string, data []byte, opts FileOptions) (_ *os.File, err error) {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|durable.NoPoll, 0o600)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	if _, err := f.Write(data); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	if err := applyOwnerMode(f, opts); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return f, nil
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
// (DirWriter removes it after the next swap, or after its grace period;
// re-check with CurrentPath after reading, as ReadCurrent does).
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

// readGeneration reads every regular file of the generation directory
// dir, in sub-directories too (by their "/"-separated path), following
// no link.
func readGeneration(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return files, nil
}
