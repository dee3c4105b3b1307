package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUntrustedLink matches (errors.Is) every *UntrustedLinkError.
var ErrUntrustedLink = errors.New("symbolic link that others can replace")

// UntrustedLinkError is a symbolic link on the way to a destination (a
// parent directory, a dir target's directory, or the destination itself
// with FollowSymlink) that a user other than root and the writing
// process's user could have made or could replace: it lives in a directory
// such a user owns or may write to. Following it would let that user
// point the write at any file the agent may replace (the write would then
// replace /etc/shadow instead of /srv/app/conf/app.conf), so nothing is
// written.
type UntrustedLinkError struct {
	// Link is the symbolic link, Target what it points to, Dir the
	// directory holding it and Why what makes that directory untrusted.
	Link, Target, Dir, Why string
}

func (e *UntrustedLinkError) Error() string {
	return fmt.Sprintf("render: %s is a symbolic link (to %s) in %s, which %s: not followed, nothing written "+
		"(a link on the way to a destination is followed only when no user but root and the agent's can replace it; "+
		"write the path without the link in the configuration, or make %s writable by root or the agent's user alone)",
		e.Link, e.Target, e.Dir, e.Why, e.Dir)
}

// Is makes errors.Is(err, ErrUntrustedLink) true.
func (e *UntrustedLinkError) Is(target error) bool { return target == ErrUntrustedLink }

// linkDistrust says why a symbolic link (link, as lstat saw it) in the
// directory dir (as stat saw it) could have been made, or could be
// replaced, by a user other than root and the process's effective user;
// "" when it could not. The directory's owner may replace any entry; a
// group- or world-writable directory lets others replace its entries,
// unless it is sticky (like /tmp), where only an entry's owner (and the
// directory's) may.
func linkDistrust(dir, link fs.FileInfo) string {
	duid, _, ok1 := fileOwner(dir)
	luid, _, ok2 := fileOwner(link)
	if !ok1 || !ok2 {
		return "has owners this platform does not report"
	}
	trusted := func(uid int) bool { return uid == 0 || uid == os.Geteuid() }
	m := dir.Mode()
	sticky := m&fs.ModeSticky != 0
	switch {
	case !trusted(duid):
		return fmt.Sprintf("is owned by uid %d", duid)
	case m&0o002 != 0 && !sticky:
		return fmt.Sprintf("every user may write to (mode %04o)", m.Perm())
	case m&0o020 != 0 && !sticky:
		return fmt.Sprintf("its group may write to (mode %04o)", m.Perm())
	case sticky && m&0o022 != 0 && !trusted(luid):
		return fmt.Sprintf("others may write to (mode %04o, sticky) and holds the link as uid %d's", m.Perm(), luid)
	}
	return ""
}

// openDir opens the directory dir (made absolute) for writing into it.
// It walks dir from "/" one component at a time, each opened relative to
// the one before without following a symbolic link (os.Root: openat with
// O_NOFOLLOW), so that no link swapped into the path can redirect the
// write. A link met on the way is followed only when linkDistrust finds
// nothing against it (a link root made, like /etc/nginx ->
// /opt/nginx/etc, is followed), by walking its target the same way; at
// most 40 links. With create, missing directories are made (mode 0755,
// less the umask), never through a link. It returns the directory open
// and its path with the links followed.
func openDir(dir string, create bool) (*os.Root, string, error) {
	path, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", fmt.Errorf("render: %w", err)
	}
	if root, ok := openDirFast(path); ok {
		return root, path, nil
	}
	for hops := 0; ; hops++ {
		root, real, next, err := walkDir(path, create)
		if next == "" || err != nil {
			return root, real, err
		}
		if hops >= maxSymlinkHops {
			return nil, "", &fs.PathError{Op: "open", Path: dir, Err: syscall.ELOOP}
		}
		path = next
	}
}

// walkDir is one walk of openDir: the directory open, or, at the first
// trusted link, the path to walk instead (next).
func walkDir(path string, create bool) (root *os.Root, real, next string, err error) {
	r, err := os.OpenRoot(string(filepath.Separator))
	if err != nil {
		return nil, "", "", fmt.Errorf("render: %w", err)
	}
	defer func() {
		if root == nil {
			_ = r.Close()
		}
	}()
	comps := strings.Split(strings.Trim(filepath.ToSlash(path), "/"), "/")
	cur := string(filepath.Separator)
	for i, comp := range comps {
		if comp == "" {
			continue // path is "/"
		}
		p := filepath.Join(cur, comp)
		fi, err := r.Lstat(comp)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err := r.Mkdir(comp, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, "", "", fmt.Errorf("render: %w", pathError("mkdir", p, err))
			}
			fi, err = r.Lstat(comp)
		}
		if err != nil {
			return nil, "", "", fmt.Errorf("render: %w", pathError("lstat", p, err))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := r.Readlink(comp)
			if err != nil {
				return nil, "", "", fmt.Errorf("render: %w", pathError("readlink", p, err))
			}
			d, err := r.Stat(".")
			if err != nil {
				return nil, "", "", fmt.Errorf("render: %w", pathError("stat", cur, err))
			}
			if why := linkDistrust(d, fi); why != "" {
				return nil, "", "", &UntrustedLinkError{Link: p, Target: target, Dir: cur, Why: why}
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target) // cur holds no link: ".." is lexical
			}
			return nil, "", filepath.Join(append([]string{target}, comps[i+1:]...)...), nil
		}
		if !fi.IsDir() {
			op := "open"
			if create {
				op = "mkdir" // as os.MkdirAll says it
			}
			return nil, "", "", fmt.Errorf("render: %w", &fs.PathError{Op: op, Path: p, Err: syscall.ENOTDIR})
		}
		sub, err := r.OpenRoot(comp)
		if err != nil {
			return nil, "", "", fmt.Errorf("render: %w", pathError("open", p, err))
		}
		// OpenRoot follows a link swapped in since the lstat: the
		// directory opened must be the one lstat saw.
		if st, err := sub.Stat("."); err != nil || !os.SameFile(fi, st) {
			_ = sub.Close()
			return nil, "", "", fmt.Errorf("render: %s changed while being opened (a symbolic link swapped in?): nothing written", p)
		}
		_ = r.Close()
		r, cur = sub, p
	}
	return r, cur, "", nil
}

// pathError re-labels an error of an os.Root operation (whose path is
// relative to the root) with the full path, keeping the errno.
func pathError(op, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// sameDir reports whether two open directories are the same one.
func sameDir(a, b *os.Root) bool {
	sa, err1 := a.Stat(".")
	sb, err2 := b.Stat(".")
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
