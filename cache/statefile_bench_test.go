package cache

import (
	"fmt"
	"maps"
	"path/filepath"
	"testing"
)

// BenchmarkStateWrite is one apply's state write for a one-item change of
// a 20-item set of 1 KiB items (the benchmark's 20/1): with the commit
// record in the pack, one append and one fdatasync; with a commit file,
// an append, a temporary, two fsyncs, a rename and a directory fsync.
// Run it on a real disk (TMPDIR), not tmpfs, to see the disk waits.
func BenchmarkStateWrite(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state", "snapshot.state")
	st := newStateStore(path, "/r")
	m := bigSet(20, 1024, "v")
	snaps := make([]*Snapshot, 0, b.N+1)
	for i := range b.N + 1 {
		m["item007"] = fmt.Appendf(nil, "generation %d", i)
		snaps = append(snaps, fzSnapshot(int64(i+1), maps.Clone(m)))
	}
	if err := st.write(snaps[0]); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if err := st.write(snaps[i+1]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateWriteAll is one apply's state write when every item of a
// 20-item set changes (the benchmark's 20/20, at 1 and 64 KiB): the
// allocations per write are what the agent's heap holds while it
// persists a snapshot it is also rendering. With TMPDIR on tmpfs it
// times the write's CPU without the disk's waits.
func BenchmarkStateWriteAll(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("20x%dKiB", size>>10), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state", "snapshot.state")
			st := newStateStore(path, "/r")
			snaps := make([]*Snapshot, 0, b.N+1)
			for i := range b.N + 1 {
				snaps = append(snaps, fzSnapshot(int64(i+1), bigSet(20, size, fmt.Sprint(i))))
			}
			if err := st.write(snaps[0]); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := st.write(snaps[i+1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
