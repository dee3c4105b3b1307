package publish

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/manifest"
)

// LoadOptions says how LoadDir maps a directory to items.
type LoadOptions struct {
	// Flatten names the files of sub-directories by their path relative
	// to the directory with "/" replaced by "_": a/b.conf becomes the
	// item "a_b.conf" (a flat set). Two files mapping to the same name are
	// refused. Without Flatten the tree is kept: a/b.conf is the item path
	// "a/b.conf" (docs/design.md, "Config trees").
	Flatten bool
	// MaxItemSize refuses, without reading them, files larger than this;
	// 0 means ItemLimit.
	MaxItemSize int64
	// FollowExternalSymlinks reads symbolic links whose target resolves
	// outside the directory. Without it such a link is refused: a link to
	// /etc/shadow dropped into a published (or watched) directory would
	// otherwise send that file to every host and keep it in history.
	FollowExternalSymlinks bool
	// Ignore lists glob patterns (path.Match) of entries to skip, besides
	// DefaultIgnore (unless NoDefaultIgnore). A pattern without "/" is
	// matched against an entry's name at every level; one with "/"
	// against its path relative to the directory ("sub/*.bak"). A skipped
	// directory is skipped whole.
	Ignore []string
	// NoDefaultIgnore leaves DefaultIgnore out: only Ignore applies.
	NoDefaultIgnore bool

	// readFile replaces reading a file in tests (to simulate unreadable
	// files when running as root).
	readFile func(string) ([]byte, error)
}

// DefaultIgnore returns the patterns LoadDir skips unless
// LoadOptions.NoDefaultIgnore: the backup, swap, autosave and temporary
// files editors and packaging tools leave beside a file (Emacs app.conf~,
// #app.conf#; Vim app.conf~, *.swp/*.swo/*.swx and its 4913 write probe;
// *.tmp, *.bak, *.orig, *.rej; dpkg's and rpm's kept copies; JetBrains'
// safe-write files). Publishing one would send a stale copy, or half of a
// file being saved, to every host. Hidden files (.#app.conf, .app.conf.swp)
// are skipped anyway.
func DefaultIgnore() []string {
	return []string{"*~", "#*#", "*.swp", "*.swo", "*.swx", "4913", "*.tmp", "*.bak", "*.orig", "*.rej",
		"*.dpkg-old", "*.dpkg-new", "*.dpkg-dist", "*.rpmnew", "*.rpmsave", "*___jb_tmp___", "*___jb_old___"}
}

func (o LoadOptions) limit() int64 {
	if o.MaxItemSize <= 0 || o.MaxItemSize > ItemLimit {
		return ItemLimit
	}
	return o.MaxItemSize
}

// patterns returns the ignore patterns in effect, and an error naming
// every malformed one.
func (o LoadOptions) patterns() ([]string, error) {
	var pats []string
	if !o.NoDefaultIgnore {
		pats = DefaultIgnore()
	}
	var errs []error
	for _, p := range o.Ignore {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			errs = append(errs, &InputError{Err: fmt.Errorf("ignore pattern %q: not a glob pattern (path.Match syntax: *, ?, [a-z], \\ to quote)", p)})
			continue
		}
		pats = append(pats, p)
	}
	return pats, errlist.Join(errs...)
}

// CheckIgnore reports every malformed pattern of opts.Ignore (LoadDir
// reports them too), so that a command can refuse them before it reads
// or connects to anything.
func CheckIgnore(opts LoadOptions) error {
	_, err := opts.patterns()
	return err
}

// DirContents is what LoadDirContents read from a directory.
type DirContents struct {
	// Items are the files read, by item path.
	Items map[string][]byte
	// Ignored lists the entries an ignore pattern skipped, by their path
	// relative to the directory ("/"-separated; a directory ends in "/"),
	// sorted.
	Ignored []string
	// EmptyDirs lists the sub-directories that hold no item (none at all,
	// or only hidden or ignored entries), by their path relative to the
	// directory, ending in "/", sorted. A directory is not an item: they
	// are not published.
	EmptyDirs []string
	// Dirs lists every sub-directory read (EmptyDirs included), by its
	// path relative to the directory, sorted: what a watcher of the
	// directory must watch besides it.
	Dirs []string
}

// LoadDir reads a directory's regular files as items, named by file name.
// It is LoadDirContents without the list of ignored files.
func LoadDir(dir string, opts LoadOptions) (map[string][]byte, error) {
	c, err := LoadDirContents(dir, opts)
	return c.Items, err
}

// LoadDirContents reads a directory's regular files as items, named by
// their path relative to the directory ("conf.d/site.conf"; with
// opts.Flatten "conf.d_site.conf"). Hidden entries (names starting with
// ".") and entries matching an ignore pattern (DefaultIgnore,
// LoadOptions.Ignore) are skipped, at every level; the ignored ones are
// listed in DirContents.Ignored, the sub-directories left without items
// in DirContents.EmptyDirs. Sub-directories deeper than
// manifest.MaxDepth levels are refused. Symbolic links to regular files
// inside the directory are followed, at every level; links that resolve
// outside it are refused unless opts.FollowExternalSymlinks, and links to
// directories (so a link cannot make a loop or escape the tree), broken
// links and special files are refused.
//
// Files are read through an os.Root on the directory, so a link swapped in
// after it was checked cannot make a read escape the directory, and
// without blocking (a named pipe or device swapped in is refused, never
// read). Every problem is reported at once (a *multierror.Error of
// *InputError / *TooLargeError, each matching ErrInvalidInput); the items
// that could be read are returned with it, so a caller can run Validate on
// them and report everything together.
func LoadDirContents(dir string, opts LoadOptions) (DirContents, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return DirContents{}, errlist.Join(&InputError{Path: dir, Err: pathErr(err)})
	}
	if !st.IsDir() {
		return DirContents{}, errlist.Join(&InputError{Path: dir, Err: errors.New("not a directory")})
	}
	pats, err := opts.patterns()
	if err != nil {
		return DirContents{}, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return DirContents{}, errlist.Join(&InputError{Path: dir, Err: pathErr(err)})
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return DirContents{}, errlist.Join(&InputError{Path: dir, Err: pathErr(err)})
	}
	defer root.Close()
	l := loader{opts: opts, items: map[string][]byte{}, from: map[string]string{}, root: root, real: real, ignore: compileIgnore(pats)}
	l.walk(".", dir, "", 1)
	slices.Sort(l.empty)
	slices.Sort(l.dirs)
	return DirContents{Items: l.items, Ignored: l.ignored, EmptyDirs: l.empty, Dirs: l.dirs}, errlist.Join(l.errs...)
}

type loader struct {
	opts  LoadOptions
	items map[string][]byte
	from  map[string]string // item name -> file it came from
	errs  []error

	// root is the directory LoadDirContents reads, real its path with
	// symbolic links resolved; ignore the patterns in effect and ignored
	// what they skipped.
	root    *os.Root
	real    string
	ignore  []ignorePattern
	ignored []string
	// empty and dirs are the sub-directories without items and all of
	// them (DirContents).
	empty, dirs []string
}

// ignores reports whether the entry at rel (relative to the directory,
// "/"-separated) with name is skipped by a pattern.
func (l *loader) ignores(rel, name string) bool {
	for _, p := range l.ignore {
		if p.match(rel, name) {
			return true
		}
	}
	return false
}

// ignorePattern is an ignore pattern ready to match: the default ones
// (*.swp, #*#, 4913, ...) are a suffix, a prefix and suffix, or a name,
// which a string comparison decides; path.Match tried each of the 17
// defaults on each file (backtracking over the name at every *), a
// quarter of the CPU of reading a directory of 100 small files
// (docs/bench/latency-pushstart-2026-11-27). Any other pattern goes
// through path.Match, as every pattern did.
type ignorePattern struct {
	glob string
	// onPath: the pattern has a '/' and is matched against the relative
	// path, not the name.
	onPath bool
	// simple: glob is prefix, then a '*' (when star), then suffix, with no
	// other special character; a '*' matches anything but '/', and a name
	// has none.
	simple, star   bool
	prefix, suffix string
}

// compileIgnore prepares patterns (already checked by path.Match).
func compileIgnore(patterns []string) []ignorePattern {
	out := make([]ignorePattern, 0, len(patterns))
	for _, g := range patterns {
		p := ignorePattern{glob: g, onPath: strings.Contains(g, "/")}
		if !p.onPath {
			before, after, star := strings.Cut(g, "*")
			if !strings.ContainsAny(before, `*?[\`) && !strings.ContainsAny(after, `*?[\`) {
				p.simple, p.star, p.prefix, p.suffix = true, star, before, after
			}
		}
		out = append(out, p)
	}
	return out
}

// match reports whether the entry at rel with name matches p, as
// path.Match(p.glob, name) (rel when the pattern has a '/') does.
func (p ignorePattern) match(rel, name string) bool {
	switch {
	case p.onPath:
		ok, _ := path.Match(p.glob, rel)
		return ok
	case !p.simple:
		ok, _ := path.Match(p.glob, name)
		return ok
	case !p.star:
		return name == p.prefix
	}
	return len(name) >= len(p.prefix)+len(p.suffix) && strings.HasPrefix(name, p.prefix) && strings.HasSuffix(name, p.suffix) &&
		!strings.Contains(name[len(p.prefix):len(name)-len(p.suffix)], "/")
}

// walk reads the directory rel (relative to the root; full is its path
// for messages), at depth (1 for the directory itself), naming its items
// with prefix. It returns how many files it found below rel (read or
// refused).
func (l *loader) walk(rel, full, prefix string, depth int) (files int) {
	entries, err := fs.ReadDir(l.root.FS(), rel)
	if err != nil {
		l.errs = append(l.errs, &InputError{Path: full, Err: pathErr(err)})
		return 1
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		erel := path.Join(rel, name)
		if l.ignores(erel, name) {
			if e.IsDir() {
				erel += "/"
			}
			l.ignored = append(l.ignored, erel)
			continue
		}
		efull := filepath.Join(full, name)
		item := prefix + name
		if !e.IsDir() {
			files++
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			l.link(item, efull)
		case e.IsDir():
			if depth >= manifest.MaxDepth {
				l.errs = append(l.errs, &InputError{Path: efull, Err: fmt.Errorf("directory nested more than %d levels deep: an item path has at most %d components", manifest.MaxDepth-1, manifest.MaxDepth)})
				files++
				continue
			}
			sep := "/"
			if l.opts.Flatten {
				sep = "_"
			}
			l.dirs = append(l.dirs, erel)
			n := l.walk(erel, efull, item+sep, depth+1)
			if n == 0 {
				l.empty = append(l.empty, erel+"/")
			}
			files += n
		case e.Type().IsRegular():
			info, err := e.Info()
			if err != nil {
				l.errs = append(l.errs, &InputError{Path: efull, Err: pathErr(err)})
				continue
			}
			l.add(item, efull, info.Size(), func() (*os.File, error) { return l.root.OpenFile(erel, openFlags, 0) })
		default:
			l.errs = append(l.errs, &InputError{Path: efull, Err: fmt.Errorf("%s, not a regular file", kind(e.Type()))})
		}
	}
	return files
}

// link reads the symbolic link full as item: a link resolving to a
// regular file inside the directory is read as that file, through the
// root (a link swapped in since cannot make the read leave the
// directory); one resolving outside it only with FollowExternalSymlinks.
func (l *loader) link(item, full string) {
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		l.errs = append(l.errs, &InputError{Path: full, Err: fmt.Errorf("broken symbolic link: %v", pathErr(err))})
		return
	}
	var st fs.FileInfo
	var open func() (*os.File, error)
	if inDir(l.real, resolved) {
		rel, _ := filepath.Rel(l.real, resolved) // cannot fail: resolved is below real
		st, err = l.root.Stat(rel)
		open = func() (*os.File, error) { return l.root.OpenFile(rel, openFlags, 0) }
	} else {
		if !l.opts.FollowExternalSymlinks {
			l.errs = append(l.errs, &InputError{Path: full, Err: fmt.Errorf("symbolic link to %s, outside the directory: not read (a link could publish any file this user can read; --follow-external-symlinks / LoadOptions.FollowExternalSymlinks allows it)", resolved)})
			return
		}
		st, err = os.Stat(resolved)
		open = func() (*os.File, error) { return os.OpenFile(resolved, openFlags, 0) }
	}
	switch {
	case err != nil:
		l.errs = append(l.errs, &InputError{Path: full, Err: fmt.Errorf("symbolic link changed while being read: %v", pathErr(err))})
	case st.IsDir():
		l.errs = append(l.errs, &InputError{Path: full, Err: errors.New("symbolic link to a directory: not followed")})
	case !st.Mode().IsRegular():
		l.errs = append(l.errs, &InputError{Path: full, Err: fmt.Errorf("symbolic link to a %s, not a regular file", kind(st.Mode()))})
	default:
		l.add(item, full, st.Size(), open)
	}
}

// inDir reports whether the clean path p is base or below it.
func inDir(base, p string) bool {
	if base == p || base == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, base+string(filepath.Separator))
}

// openFlags open a file for reading without waiting: a named pipe or a
// device swapped in after the checks is opened without blocking, then
// refused (readOpen).
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// add reads the file full (size bytes when listed) as item through open.
func (l *loader) add(item, full string, size int64, open func() (*os.File, error)) {
	if prev, dup := l.from[item]; dup {
		l.errs = append(l.errs, &InputError{Item: item, Err: fmt.Errorf("both %s and %s map to this item name", prev, full)})
		delete(l.items, item)
		return
	}
	l.from[item] = full
	limit := l.opts.limit()
	if size > limit {
		l.errs = append(l.errs, &TooLargeError{What: "item", Item: item, Size: size, Limit: limit, Hint: "split it into smaller items (file " + full + ")"})
		return
	}
	var data []byte
	var err error
	if l.opts.readFile != nil {
		data, err = l.opts.readFile(full)
	} else {
		data, err = readOpen(open, limit)
	}
	var tl *TooLargeError
	switch {
	case errors.As(err, &tl):
		tl.Item, tl.Hint = item, "split it into smaller items (file "+full+")"
		l.errs = append(l.errs, tl)
	case err != nil:
		l.errs = append(l.errs, &InputError{Item: item, Path: full, Err: fmt.Errorf("cannot read: %v", pathErr(err))})
	default:
		l.items[item] = data
	}
}

// readOpen reads the file open returns, refusing what is not a regular
// file once open (it may have been swapped since it was listed) and
// reading at most limit bytes (it may have grown).
func readOpen(open func() (*os.File, error), limit int64) ([]byte, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s, not a regular file (changed since it was listed)", kind(st.Mode()))
	}
	data, err := readSized(f, st.Size(), limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{What: "item", Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// readSized reads r to its end, at most max bytes, into a buffer sized for
// size bytes (the file's size when it was opened) and one more, so that a
// file that did not change is read in one buffer and its end seen without
// growing it (io.ReadAll starts at 512 bytes and grows by copying: three
// allocations and two copies for a 1 KiB item). A file that grew since is
// read on, growing the buffer, up to most bytes.
func readSized(r io.Reader, size, most int64) ([]byte, error) {
	if size < 0 || size >= most {
		size = most
	} else {
		size++
	}
	r = io.LimitReader(r, most)
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// LoadFiles reads the given files as items named by their base names.
// Symbolic links to regular files are followed (the operator named them).
// Directories, special files, missing or unreadable files and two files
// with the same base name are refused; every problem is reported at once,
// with the items that could be read.
func LoadFiles(paths []string) (map[string][]byte, error) {
	l := loader{items: map[string][]byte{}, from: map[string]string{}}
	if len(paths) == 0 {
		return l.items, nil
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			l.errs = append(l.errs, &InputError{Path: p, Err: pathErr(err)})
		case st.IsDir():
			l.errs = append(l.errs, &InputError{Path: p, Err: errors.New("is a directory (a directory is published on its own: pass it as the only argument)")})
		case !st.Mode().IsRegular():
			l.errs = append(l.errs, &InputError{Path: p, Err: fmt.Errorf("%s, not a regular file", kind(st.Mode()))})
		default:
			l.add(filepath.Base(p), p, st.Size(), func() (*os.File, error) { return os.OpenFile(p, openFlags, 0) })
		}
	}
	return l.items, errlist.Join(l.errs...)
}

// pathErr strips the operation and path from an *fs.PathError (the caller
// names the path itself).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, fs.ErrNotExist) {
			return errors.New("does not exist")
		}
		return pe.Err
	}
	return err
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// sortedNames returns the item names of a set in order.
func sortedNames(items map[string][]byte) []string { return slices.Sorted(maps.Keys(items)) }
