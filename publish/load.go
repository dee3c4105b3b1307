package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkconf/zkconf/internal/errlist"
)

// LoadOptions says how LoadDir maps a directory to items.
type LoadOptions struct {
	// Flatten accepts sub-directories, naming their files by their path
	// relative to the directory with "/" replaced by "_": a/b.conf becomes
	// the item "a_b.conf". Two files mapping to the same name are refused.
	// Without Flatten, sub-directories are refused.
	Flatten bool
	// MaxItemSize refuses, without reading them, files larger than this;
	// 0 means ItemLimit.
	MaxItemSize int64

	// readFile replaces os.ReadFile in tests (to simulate unreadable files
	// when running as root).
	readFile func(string) ([]byte, error)
}

func (o LoadOptions) read(name string) ([]byte, error) {
	if o.readFile != nil {
		return o.readFile(name)
	}
	return os.ReadFile(name)
}

func (o LoadOptions) limit() int64 {
	if o.MaxItemSize <= 0 || o.MaxItemSize > ItemLimit {
		return ItemLimit
	}
	return o.MaxItemSize
}

// LoadDir reads a directory's regular files as items, named by file name.
// Hidden entries (names starting with ".") are skipped, at every level.
// Symbolic links to regular files are followed; links to directories are
// refused (so a link cannot make a loop or escape the tree), as are broken
// links and special files. Sub-directories are refused unless
// opts.Flatten. Every problem is reported at once (a *multierror.Error of
// *InputError / *TooLargeError, each matching ErrInvalidInput); the items
// that could be read are returned with it, so a caller can run Validate on
// them and report everything together.
func LoadDir(dir string, opts LoadOptions) (map[string][]byte, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, errlist.Join(&InputError{Path: dir, Err: pathErr(err)})
	}
	if !st.IsDir() {
		return nil, errlist.Join(&InputError{Path: dir, Err: errors.New("not a directory")})
	}
	l := loader{opts: opts, items: map[string][]byte{}, from: map[string]string{}}
	l.walk(dir, "")
	return l.items, errlist.Join(l.errs...)
}

type loader struct {
	opts  LoadOptions
	items map[string][]byte
	from  map[string]string // item name -> file it came from
	errs  []error
}

func (l *loader) walk(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		l.errs = append(l.errs, &InputError{Path: dir, Err: pathErr(err)})
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		full := filepath.Join(dir, name)
		item := prefix + name
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			st, err := os.Stat(full)
			switch {
			case err != nil:
				l.errs = append(l.errs, &InputError{Path: full, Err: fmt.Errorf("broken symbolic link: %v", pathErr(err))})
			case st.IsDir():
				l.errs = append(l.errs, &InputError{Path: full, Err: errors.New("symbolic link to a directory: not followed")})
			case !st.Mode().IsRegular():
				l.errs = append(l.errs, &InputError{Path: full, Err: fmt.Errorf("symbolic link to a %s, not a regular file", kind(st.Mode()))})
			default:
				l.add(item, full, st.Size())
			}
		case e.IsDir():
			if !l.opts.Flatten {
				l.errs = append(l.errs, &InputError{Path: full, Err: errors.New("sub-directories are not published (use --flatten / LoadOptions.Flatten to map dir/file to dir_file)")})
				continue
			}
			l.walk(full, item+"_")
		case e.Type().IsRegular():
			info, err := e.Info()
			if err != nil {
				l.errs = append(l.errs, &InputError{Path: full, Err: pathErr(err)})
				continue
			}
			l.add(item, full, info.Size())
		default:
			l.errs = append(l.errs, &InputError{Path: full, Err: fmt.Errorf("%s, not a regular file", kind(e.Type()))})
		}
	}
}

func (l *loader) add(item, full string, size int64) {
	if prev, dup := l.from[item]; dup {
		l.errs = append(l.errs, &InputError{Item: item, Err: fmt.Errorf("both %s and %s map to this item name", prev, full)})
		delete(l.items, item)
		return
	}
	l.from[item] = full
	if limit := l.opts.limit(); size > limit {
		l.errs = append(l.errs, &TooLargeError{What: "item", Item: item, Size: size, Limit: limit, Hint: "split it into smaller items (file " + full + ")"})
		return
	}
	data, err := l.opts.read(full)
	if err != nil {
		l.errs = append(l.errs, &InputError{Item: item, Path: full, Err: fmt.Errorf("cannot read: %v", pathErr(err))})
		return
	}
	l.items[item] = data
}

// LoadFiles reads the given files as items named by their base names.
// Symbolic links to regular files are followed. Directories, special
// files, missing or unreadable files and two files with the same base
// name are refused; every problem is reported at once, with the items that
// could be read.
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
			l.add(filepath.Base(p), p, st.Size())
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
