// Package render writes a verified, immutable configuration snapshot to
// disk: single files replaced atomically (WriteFile, Stage) and whole
// directories swapped atomically through a "..data" symlink (DirWriter,
// Kubernetes' AtomicWriter algorithm, step by step in its documentation).
// Turning items into text is the job of internal/template; this package only
// writes bytes. The temporary-file, fsync and rename steps are those of
// internal/durable, including its policy for filesystems that refuse
// directory fsyncs.
//
// Everything here is written so that a process killed at any instant (SIGKILL,
// power loss after the fsyncs) leaves consumers looking at either the complete
// old content or the complete new content, never a truncated or empty file.
//
// Nothing is written through a symbolic link that a user other than root
// and the process's own could have made or could replace: every write
// opens its directory from "/" one component at a time, relative to the
// one before and without following links (os.Root, openat with
// O_NOFOLLOW), follows only the links no such user can replace (a link
// root made, like /etc/nginx -> /opt/nginx/etc; UntrustedLinkError for
// the others), and then works in the directory so opened, by name. A link
// swapped into the path after the write started changes nothing; one
// swapped in before it is refused unless it is trusted.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/zkconf/zkconf/internal/durable"
	"github.com/zkconf/zkconf/internal/errlist"
)

// ErrSymlinkDest is returned (wrapped in an *os.PathError) when the
// destination of WriteFile or Stage is a symbolic link and
// FileOptions.FollowSymlink is false. Replacing a symlink with a regular
// file silently would break whatever layout the administrator built (and
// following it blindly could write outside the intended directory), so the
// caller has to opt in.
var ErrSymlinkDest = errors.New("destination is a symbolic link")

// ErrNotRegular is returned (wrapped in an *os.PathError) when the
// destination exists but is not a regular file (a directory, a device, a
// socket...). Renaming over it would either fail obscurely or destroy it.
var ErrNotRegular = errors.New("destination is not a regular file")

// ErrAlreadyDone is returned by Commit when the staged file or directory
// was already committed or aborted.
var ErrAlreadyDone = errors.New("staged change already committed or aborted")

// tempMarker is part of every temporary file name so that stale files left
// by a crash can be recognised (see RemoveStaleTemps) and so that humans
// listing the directory know who left them there.
const tempMarker = ".zkconf-tmp"

// maxSymlinkHops bounds symlink resolution, like the kernel's ELOOP limit.
const maxSymlinkHops = 40

// maxTempBase bounds the part of the destination name that is copied into
// the temporary file name, keeping the result below NAME_MAX (255).
const maxTempBase = 200

// modeBits are the mode bits WriteFile applies and compares. File type bits
// are not allowed in FileOptions.Mode.
const modeBits = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// FileOptions says how a written file must look on disk.
//
// The zero value is usually not what you want: UID and GID 0 mean root and
// Mode 0 means no permissions at all. Start from DefaultFileOptions.
type FileOptions struct {
	// Mode is the permission bits (plus optionally setuid, setgid, sticky)
	// of the written file. It is applied with fchmod, so the process umask
	// does not matter.
	Mode os.FileMode
	// UID and GID are the numeric owner and group; -1 means "do not chown".
	// Because a replaced file is a new inode, -1 means the file ends up
	// owned by the writing process, not by the previous file's owner.
	UID, GID int
	// FollowSymlink allows the destination of WriteFile/Stage to be a
	// symbolic link; the final target of the link is replaced and the link
	// itself is kept. Like a link on the way to the destination, it is
	// followed only when no user but root and the process's could have
	// replaced it (UntrustedLinkError). Ignored by DirWriter, which manages
	// its own links.
	FollowSymlink bool
	// DirMode is the mode of the sub-directories a DirWriter creates for
	// a payload's paths (0 means 0755; they are owned like the files,
	// UID and GID). WriteFile ignores it.
	DirMode os.FileMode
	// CreateDirs creates the destination's missing parent directories
	// (mode 0755, less the umask), never through a symbolic link that
	// others could replace. Without it a missing parent is an error.
	// DirWriter always creates its directory.
	CreateDirs bool
}

// dirMode is the mode of a DirWriter's sub-directories.
func (o FileOptions) dirMode() os.FileMode {
	if o.DirMode == 0 {
		return dirMode
	}
	return o.DirMode
}

// DefaultFileOptions returns mode 0640 without any chown.
func DefaultFileOptions() FileOptions {
	return FileOptions{Mode: 0o640, UID: -1, GID: -1}
}

func (o FileOptions) validate() error {
	if o.Mode&^modeBits != 0 {
		return fmt.Errorf("render: invalid file mode %v: only permission, setuid, setgid and sticky bits are allowed", o.Mode)
	}
	if o.DirMode&^modeBits != 0 || (o.DirMode != 0 && o.DirMode&0o700 != 0o700) {
		return fmt.Errorf("render: invalid directory mode %v: permission, setgid and sticky bits, with rwx for the owner", o.DirMode)
	}
	if o.UID < -1 || o.GID < -1 {
		return fmt.Errorf("render: invalid owner %d:%d", o.UID, o.GID)
	}
	return nil
}

// WriteFile atomically replaces the file at path with data, mode and owner
// taken from opts. It reports whether anything on disk changed.
//
// The algorithm:
//
//  1. Open the destination's directory from "/", one component at a time
//     relative to the one before, without following a symbolic link
//     (openat with O_NOFOLLOW, through os.Root): a link on the way is
//     followed only when no user but root and the process's own could
//     have made or could replace it (it lives in a directory only they
//     may write to); any other fails with an *UntrustedLinkError, and
//     nothing is written. Every later step works in the directory so
//     opened, by name, so a link swapped into the path meanwhile changes
//     nothing. Then resolve the destination in it: if it is a symlink,
//     fail with ErrSymlinkDest unless opts.FollowSymlink is set, in which
//     case the link (if trusted, as above) is followed (at most 40 hops)
//     and the final target is what gets replaced. An existing destination
//     that is not a regular file fails with ErrNotRegular.
//  2. If the destination exists with identical content, mode and (where
//     opts asks for one) owner, return changed=false without writing
//     anything: no new inode, no mtime change, no fsync. Consumers watching
//     the file (inotify, mtime polling) see nothing.
//  3. Create a temporary file in the destination's directory (so the
//     rename in step 6 stays within one filesystem and is atomic); its name
//     is "." + base name + ".zkconf-tmp" + random digits, hidden from
//     naive globbing and recognisable by RemoveStaleTemps.
//  4. Write the data, then fchown (if opts asks) and fchmod. chown comes
//     first because it may clear setuid/setgid bits; both happen before the
//     rename so the file never becomes visible with wrong permissions.
//  5. fsync the file, so that after a power loss the rename in step 6
//     cannot expose a file whose data blocks were never written.
//  6. rename(2) the temporary file over the destination: readers see the
//     old inode or the new one, never a partial file.
//  7. fsync the directory, making the rename itself durable.
//
// On any error before the rename the temporary file is removed and the
// destination is untouched. A crash (SIGKILL) can leave a temporary file
// behind; call RemoveStaleTemps at start-up to clean it. The parent
// directory must exist, unless opts.CreateDirs.
//
// WriteFile must not be called concurrently for the same destination.
func WriteFile(path string, data []byte, opts FileOptions) (changed bool, err error) {
	defer func() { err = classify(err) }()
	if err := opts.validate(); err != nil {
		return false, err
	}
	dest, err := resolveDest(path, opts)
	if err != nil {
		return false, err
	}
	_, same, err := sameFileInfo(dest.root, dest.name, data, opts)
	if err != nil || same {
		dest.close()
		return false, err
	}
	s, err := stage(path, dest, data, opts)
	if err != nil {
		return false, err
	}
	// The comparison above was just done; committing without a second one
	// avoids reading the destination twice.
	return s.commit(false)
}

// StagedFile is a complete, fsynced temporary file waiting to replace its
// destination. It exists so that a check command (nginx -t -c FILE,
// visudo -cf FILE, ...) can validate the new content at Path before it
// becomes visible at the destination. Exactly one of Commit or Abort must
// be called; calling Abort after Commit is a harmless no-op, so
// "defer s.Abort()" is the intended idiom.
type StagedFile struct {
	path string   // destination as given by the caller
	dest destFile // destination after symlink resolution, its directory open
	tmp  string   // the temporary file's name in dest's directory
	data []byte
	// sum stands for the content instead of data when the content was
	// streamed (FileStream): not the zero Digest then.
	sum     Digest
	opts    FileOptions
	changed bool
	done    bool
	// differs is the identity of the destination Stage found different
	// from data (zero: none, or not known).
	differs fileID
	// seen is what Commit's lstat of the destination found (stillInPlace),
	// nil if it did not look.
	seen fs.FileInfo
}

// destFile is the file a write replaces: name in the directory root
// holds open, dir on disk.
type destFile struct {
	root      *os.Root
	dir, name string
}

func (d destFile) path() string { return filepath.Join(d.dir, d.name) }

func (d destFile) close() {
	if d.root != nil {
		_ = d.root.Close()
	}
}

// Stage performs steps 1 and 3-5 of WriteFile: it writes data to a
// temporary file next to the destination with the final mode and owner,
// fsyncs it, and returns it without touching the destination. A temporary
// file is created even when the content is unchanged, so that a check
// command always has a file to look at; Changed tells whether committing
// would change anything.
//
// data must not be modified until Commit or Abort returns.
func Stage(path string, data []byte, opts FileOptions) (_ *StagedFile, err error) {
	defer func() { err = classify(err) }()
	dest, same, differs, err := compareDest(path, data, opts)
	if err != nil {
		return nil, err
	}
	s, err := stage(path, dest, data, opts)
	if err != nil {
		return nil, err
	}
	s.changed, s.differs = !same, differs
	return s, nil
}

// Matches reports whether the file at path (resolved as WriteFile would)
// already has exactly data as content, opts' mode and (where requested)
// owner: whether WriteFile would change nothing. It writes nothing. A
// destination WriteFile would refuse (a symlink not to be followed, a
// directory) is an error.
func Matches(path string, data []byte, opts FileOptions) (bool, error) {
	opts.CreateDirs = false // writes nothing
	dest, same, _, err := compareDest(path, data, opts)
	dest.close()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // no directory yet: not in place
	}
	return same, err
}

// compareDest validates opts, resolves path's destination as WriteFile
// would and reports whether it already holds data with opts' mode and
// owner, and when it does not, the identity of the file that differs
// (zero if none). The caller closes dest (open unless err).
func compareDest(path string, data []byte, opts FileOptions) (dest destFile, same bool, differs fileID, err error) {
	return compareDestWith(path, int64(len(data)), func(r io.Reader) (bool, error) { return sameContent(r, data) }, opts)
}

// compareDestWith is compareDest for content of size bytes that sameAs
// recognises (reading the file, which has that size already).
func compareDestWith(path string, size int64, sameAs func(io.Reader) (bool, error), opts FileOptions) (dest destFile, same bool, differs fileID, err error) {
	if err := opts.validate(); err != nil {
		return destFile{}, false, fileID{}, err
	}
	if dest, err = resolveDest(path, opts); err != nil {
		return destFile{}, false, fileID{}, err
	}
	fi, same, err := sameFileInfoWith(dest.root, dest.name, size, sameAs, opts)
	if err != nil {
		dest.close()
		return destFile{}, false, fileID{}, err
	}
	if !same && fi != nil {
		differs, _ = idOf(fi)
	}
	return dest, same, differs, nil
}

// StageIfChanged is Stage for callers that have nothing to check when the
// destination is already identical: it returns nil (and writes nothing)
// in that case, and otherwise a staged file whose Changed is true.
func StageIfChanged(path string, data []byte, opts FileOptions) (_ *StagedFile, err error) {
	defer func() { err = classify(err) }()
	dest, same, differs, err := compareDest(path, data, opts)
	if err != nil || same {
		dest.close()
		return nil, err
	}
	s, err := stage(path, dest, data, opts)
	if err != nil {
		return nil, err
	}
	s.differs = differs
	return s, nil
}

// stage writes the temporary file in dest's directory; the StagedFile
// takes dest over (it is closed on an error).
func stage(path string, dest destFile, data []byte, opts FileOptions) (*StagedFile, error) {
	tmp, err := durable.WriteTempIn(dest.root, dest.dir, tempPrefix(dest.name), data, func(f *os.File) error { return applyOwnerMode(f, opts) })
	if err != nil {
		dest.close()
		return nil, fmt.Errorf("render: %w", err)
	}
	return &StagedFile{path: path, dest: dest, tmp: tmp, data: data, opts: opts, changed: true}, nil
}

// Path returns the temporary file's path, for a check command.
func (s *StagedFile) Path() string { return filepath.Join(s.dest.dir, s.tmp) }

// Dest returns the file that Commit will replace (after symlink resolution).
func (s *StagedFile) Dest() string { return s.dest.path() }

// Changed reports whether, when Stage ran, the destination differed from
// the staged content, mode or owner. Commit re-checks.
func (s *StagedFile) Changed() bool { return s.changed }

// Commit renames the staged file over the destination and fsyncs the
// directory (steps 6-7 of WriteFile). If the destination is (by now)
// identical, the staged file is discarded and changed is false. If the
// destination became a symlink since Stage (and symlinks are not followed),
// Commit fails with ErrSymlinkDest and leaves the destination alone; so it
// does when the path now leads elsewhere (a link on the way swapped, or
// refused).
func (s *StagedFile) Commit() (changed bool, err error) {
	defer func() { err = classify(err) }()
	if s.done {
		return false, ErrAlreadyDone
	}
	if ok, err := s.stillInPlace(); ok || err != nil {
		if err != nil {
			s.Abort()
			return false, err
		}
		return s.commit(true)
	}
	opts := s.opts
	opts.CreateDirs = false
	dest, err := resolveDest(s.path, opts)
	if err != nil {
		s.Abort()
		return false, err
	}
	defer dest.close()
	if dest.path() != s.dest.path() || !sameDir(dest.root, s.dest.root) {
		s.Abort()
		return false, fmt.Errorf("render: destination %s now resolves to %s, was %s at stage time", s.path, dest.path(), s.dest.path())
	}
	return s.commit(true)
}

func (s *StagedFile) commit(recheck bool) (bool, error) {
	if s.done {
		return false, ErrAlreadyDone
	}
	if recheck && !s.stillDiffers() {
		var same bool
		var err error
		if s.sum.set {
			_, same, err = sameFileInfoWith(s.dest.root, s.dest.name, s.sum.size, s.sum.sameAs, s.opts)
		} else {
			_, same, err = sameFileInfo(s.dest.root, s.dest.name, s.data, s.opts)
		}
		if err != nil {
			s.Abort()
			return false, err
		}
		if same {
			s.Abort()
			return false, nil
		}
	}
	s.done = true
	defer s.dest.close()
	if err := s.dest.root.Rename(s.tmp, s.dest.name); err != nil {
		_ = s.dest.root.Remove(s.tmp)
		return false, fmt.Errorf("render: rename into place: %w", pathError("rename", s.dest.path(), err))
	}
	// The new content is visible from here on, so report changed=true even
	// if making the rename durable fails: the caller must still reload.
	if err := syncDirIn(s.dest.root, ".", s.dest.dir); err != nil {
		return true, err
	}
	return true, nil
}

// stillInPlace is Commit's check of the destination in four system calls
// rather than a second resolveDest, for a destination Stage reached
// without a symbolic link: ok when its directory is still the one staged
// into (reached again without following any link) and the destination is
// a regular file or missing; an error (ErrSymlinkDest, ErrNotRegular)
// when the destination is not that by now. Neither (false, nil) when this
// cannot tell: Commit resolves the destination again then.
func (s *StagedFile) stillInPlace() (ok bool, err error) {
	abs, err := filepath.Abs(s.path)
	if err != nil || s.opts.FollowSymlink || s.dest.path() != abs {
		return false, nil
	}
	if same, known := stillLeadsTo(filepath.Dir(abs), s.dest.root); !known || !same {
		return false, nil
	}
	fi, err := s.dest.root.Lstat(s.dest.name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, nil
	case fi.Mode()&os.ModeSymlink != 0:
		return false, &os.PathError{Op: "write", Path: s.path, Err: ErrSymlinkDest}
	case !fi.Mode().IsRegular():
		return false, &os.PathError{Op: "write", Path: s.dest.path(), Err: ErrNotRegular}
	}
	s.seen = fi
	return true, nil
}

// stillDiffers reports whether the destination is still the very file
// (inode, size, mode, owner, mtime and ctime) that Stage found different
// from the staged data: Commit then need not read it again. A change too
// quick for the timestamps to show could only have made it identical by
// chance, and the rename then puts identical content in its place (the
// caller reloads for nothing).
func (s *StagedFile) stillDiffers() bool {
	if s.differs == (fileID{}) {
		return false
	}
	fi := s.seen
	if fi == nil {
		var err error
		if fi, err = s.dest.root.Lstat(s.dest.name); err != nil {
			return false
		}
	}
	id, ok := idOf(fi)
	return ok && id == s.differs
}

// Abort removes the staged file. It is idempotent and a no-op after Commit.
func (s *StagedFile) Abort() {
	if s.done {
		return
	}
	s.done = true
	_ = s.dest.root.Remove(s.tmp) // best effort: a leftover is cleaned by RemoveStaleTemps
	s.dest.close()
}

// RemoveStaleTemps removes temporary files that a crashed WriteFile or
// Stage left next to dest (following the symlink if opts would). It returns
// how many it removed. Call it only when no write to dest is in progress,
// typically once at start-up.
func RemoveStaleTemps(path string, followSymlink bool) (removed int, err error) {
	dest, err := resolveDest(path, FileOptions{FollowSymlink: followSymlink})
	if err != nil {
		return 0, err
	}
	defer dest.close()
	prefix := tempPrefix(dest.name)
	entries, err := readDirIn(dest.root, ".")
	if err != nil {
		return 0, fmt.Errorf("render: %w", pathError("open", dest.dir, err))
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if err := dest.root.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, pathError("remove", filepath.Join(dest.dir, e.Name()), err))
			continue
		}
		removed++
	}
	return removed, errlist.Join(errs...)
}

func tempPrefix(base string) string {
	if len(base) > maxTempBase {
		base = base[:maxTempBase]
	}
	return "." + base + tempMarker
}

// resolveDest opens the directory of path's destination (openDir, with
// opts.CreateDirs) and applies the symlink policy to the destination in
// it: the file that should actually be replaced. A missing destination is
// fine (it will be created); a dangling symlink being followed resolves to
// its missing target. The caller closes the result.
func resolveDest(path string, opts FileOptions) (destFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return destFile{}, fmt.Errorf("render: %w", err)
	}
	root, dir, err := openDir(filepath.Dir(abs), opts.CreateDirs)
	if err != nil {
		return destFile{}, err
	}
	d := destFile{root: root, dir: dir, name: filepath.Base(abs)}
	for hops := 0; ; hops++ {
		fi, err := d.root.Lstat(d.name)
		if errors.Is(err, fs.ErrNotExist) {
			return d, nil
		}
		if err != nil {
			d.close()
			return destFile{}, fmt.Errorf("render: %w", pathError("lstat", d.path(), err))
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				d.close()
				return destFile{}, &os.PathError{Op: "write", Path: d.path(), Err: ErrNotRegular}
			}
			return d, nil
		}
		if !opts.FollowSymlink {
			d.close()
			return destFile{}, &os.PathError{Op: "write", Path: path, Err: ErrSymlinkDest}
		}
		if hops >= maxSymlinkHops {
			d.close()
			return destFile{}, &os.PathError{Op: "write", Path: path, Err: syscall.ELOOP}
		}
		target, err := d.root.Readlink(d.name)
		if err == nil {
			var dirInfo fs.FileInfo
			if dirInfo, err = d.root.Stat("."); err == nil {
				if why := linkDistrust(dirInfo, fi); why != "" {
					err = &UntrustedLinkError{Link: d.path(), Target: target, Dir: d.dir, Why: why}
				}
			}
		}
		d.close()
		if err != nil {
			var ue *UntrustedLinkError
			if errors.As(err, &ue) {
				return destFile{}, err
			}
			return destFile{}, fmt.Errorf("render: %w", pathError("readlink", d.path(), err))
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(d.dir, target)
		}
		if root, dir, err = openDir(filepath.Dir(target), false); err != nil {
			return destFile{}, err
		}
		d = destFile{root: root, dir: dir, name: filepath.Base(target)}
	}
}

// sameFileInfo reports whether the regular file name in root already has
// exactly data as content, opts.Mode as mode and (where requested) opts'
// owner, and returns what fstat said about the file it compared (nil when
// it does not exist). A missing file is simply "not the same". The file is
// opened without blocking: a named pipe swapped in is not waited on.
func sameFileInfo(root *os.Root, name string, data []byte, opts FileOptions) (fs.FileInfo, bool, error) {
	return sameFileInfoWith(root, name, int64(len(data)), func(r io.Reader) (bool, error) { return sameContent(r, data) }, opts)
}

// sameFileInfoWith is sameFileInfo for content of size bytes that sameAs
// recognises in the file (called only when the file has that size).
func sameFileInfoWith(root *os.Root, name string, size int64, sameAs func(io.Reader) (bool, error), opts FileOptions) (fs.FileInfo, bool, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|durable.NoPoll, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("render: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("render: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != size || !attrsMatch(fi, opts) {
		return fi, false, nil
	}
	contentReads.Add(1)
	same, err := sameAs(f)
	return fi, same, err
}

// contentReads counts files whose content was read for a comparison (for
// tests: what DirWriter's records spare).
var contentReads atomic.Int64

// attrsMatch reports whether fi has opts' mode bits and (where requested)
// owner.
func attrsMatch(fi fs.FileInfo, opts FileOptions) bool {
	return fi.Mode()&modeBits == opts.Mode && ownerMatches(fi, opts)
}

// sameContent compares r with data chunk by chunk, so that comparing a
// large file does not need a second full copy in memory.
func sameContent(r io.Reader, data []byte) (bool, error) {
	// Sized to the data: most outputs are far smaller than 32 KiB, and a
	// fixed buffer per comparison was most of the agent's garbage.
	buf := make([]byte, min(32<<10, len(data)+1))
	for len(data) > 0 {
		n := min(len(buf), len(data))
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return false, nil // shrank while we were reading
			}
			return false, fmt.Errorf("render: %w", err)
		}
		if !bytes.Equal(buf[:n], data[:n]) {
			return false, nil
		}
		data = data[n:]
	}
	// Make sure the file did not grow after Stat.
	n, err := r.Read(buf[:1])
	if n > 0 {
		return false, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("render: %w", err)
	}
	return true, nil
}

func ownerMatches(fi fs.FileInfo, opts FileOptions) bool {
	if opts.UID < 0 && opts.GID < 0 {
		return true
	}
	uid, gid, ok := fileOwner(fi)
	if !ok {
		return false
	}
	return (opts.UID < 0 || uid == opts.UID) && (opts.GID < 0 || gid == opts.GID)
}

// applyOwnerMode sets owner (first: chown may clear setuid/setgid) and then
// mode on an open file. Its errors carry no "render: " prefix: callers add it.
func applyOwnerMode(f *os.File, opts FileOptions) error {
	if opts.UID >= 0 || opts.GID >= 0 {
		if err := f.Chown(opts.UID, opts.GID); err != nil {
			return err
		}
	}
	return f.Chmod(opts.Mode)
}

// syncDirIn fsyncs the directory name of root (dir on disk, for
// messages) so that renames, creations and removals in it survive a power
// loss, with durable's policy for filesystems that refuse directory
// fsyncs.
func syncDirIn(root *os.Root, name, dir string) error {
	if err := durable.SyncDirIn(root, name, dir); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return nil
}
