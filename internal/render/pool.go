package render

import "os"

// PoolDir is the directory inside a DirWriter directory that holds empty
// files created ahead of the next write (Refill), so that a stage takes an
// inode made earlier rather than allocating one on the way to the swap.
// Its name starts with ".." (reserved: no payload name can take it) and is
// neither "..data", "..data_tmp" nor a generation directory's, so the
// crash clean-up, the sweep and the link checks pass it by. It is 0700:
// nobody else can open a pooled file before it becomes part of a
// generation.
const PoolDir = "..pool"

// maxPool caps the pool of one DirWriter: the pool holds at most as many
// files as the last stage wrote, and never more than this.
const maxPool = 256

// inodePool is what a DirWriter knows of its PoolDir. Only files this
// DirWriter created since it emptied the directory (ready) are ever
// taken; each is taken once, and its pool name is dropped by the next
// Refill: a file that was taken may have been written and linked into a
// generation, so it never goes back to free.
type inodePool struct {
	free  []string  // names in PoolDir of empty files, never opened since
	used  []poolUse // taken by a stage: their pool names are to drop
	seq   uint64    // the next file's number (its name)
	want  int       // how many files the last stage wrote (at most maxPool)
	mode  uint32    // the permission bits the free files were created with
	ready bool      // PoolDir was emptied of an earlier process's files
	// noMknod: mknodat was refused here (a system call filter), so the
	// pool's files are made by an exclusive open (createEmpty).
	noMknod bool
}

// poolUse is a pooled file a stage took: its name in PoolDir, and the
// generation directory and payload name it was linked to.
type poolUse struct{ pool, gen, name string }

// poolDraw hands the pool's free files to one stage: f is PoolDir open,
// names the free names, taken from the front; taken lists what the stage
// took, with the payload name each became.
type poolDraw struct {
	f     *os.File
	fd    int // f's descriptor
	names []string
	taken []poolUse
}

// took records what a stage into generation gen took from the pool.
func (p *inodePool) took(d *poolDraw, gen string) {
	p.free = p.free[len(d.taken):]
	for _, u := range d.taken {
		u.gen = gen
		p.used = append(p.used, u)
	}
}

// poolMode is the mode Refill creates files with for a stage with opts:
// the final one when no owner is to be set (no fchmod then), 0600 until
// the chown otherwise (as createAt).
func poolMode(opts FileOptions) uint32 {
	if opts.UID >= 0 || opts.GID >= 0 {
		return 0o600
	}
	return uint32(opts.Mode.Perm())
}

// drawPool opens PoolDir of root to take the files free from it, or
// returns nil (the stage then creates its files) when it cannot be
// opened as Refill left it.
func drawPool(root *os.Root, free []string) *poolDraw {
	f, err := openPool(root, false)
	if err != nil {
		return nil
	}
	return &poolDraw{f: f, fd: int(f.Fd()), names: free}
}

// close closes PoolDir.
func (d *poolDraw) close() { _ = d.f.Close() }
