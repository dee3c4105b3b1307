package bench

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

// TestSchedule checks that the schedule's sets, diffs and contents agree:
// the floor baseline relies on changedBetween naming exactly what differs.
func TestSchedule(t *testing.T) {
	for _, tc := range []struct{ items, changed int }{{20, 1}, {20, 3}, {7, 2}, {5, 5}} {
		s := newSchedule("t", tc.items, 64, tc.changed)
		prev := s.set(1)
		if len(prev) != tc.items {
			t.Fatalf("generation 1 has %d items, want %d", len(prev), tc.items)
		}
		for g := int64(2); g < 40; g++ {
			cur := s.set(g)
			var diff []string
			for n, b := range cur {
				if !bytes.Equal(prev[n], b) {
					diff = append(diff, n)
				}
				if genOf(b) < 1 || genOf(b) > g {
					t.Fatalf("item %s of generation %d claims generation %d", n, g, genOf(b))
				}
			}
			slices.Sort(diff)
			want := slices.Sorted(slices.Values(s.changedAt(g)))
			if !slices.Equal(diff, want) {
				t.Fatalf("%d items, %d changed: generation %d differs in %v, schedule says %v", tc.items, tc.changed, g, diff, want)
			}
			// Over several generations: the union of what changed.
			for back := int64(1); back <= 4 && g-back >= 1; back++ {
				old := s.set(g - back)
				var d []string
				for n, b := range cur {
					if !bytes.Equal(old[n], b) {
						d = append(d, n)
					}
				}
				got := s.changedBetween(g-back, g)
				for _, n := range d {
					if !slices.Contains(got, n) {
						t.Fatalf("changedBetween(%d, %d) = %v misses %s", g-back, g, got, n)
					}
				}
			}
			if first := s.changedAt(g)[0]; genOf(cur[first]) != g {
				t.Fatalf("first changed item of generation %d holds generation %d", g, genOf(cur[first]))
			}
			prev = cur
		}
	}
}

// TestFrameParser feeds replies split at every possible boundary.
func TestFrameParser(t *testing.T) {
	frame := func(xid int32, body int) []byte {
		b := make([]byte, 4+16+body)
		binary.BigEndian.PutUint32(b, uint32(16+body))
		binary.BigEndian.PutUint32(b[4:], uint32(xid))
		return b
	}
	connect := make([]byte, 4+36)
	binary.BigEndian.PutUint32(connect, 36)
	stream := slices.Concat(connect, frame(1, 10), frame(-2, 0), frame(7, 3000), frame(-1, 40))
	for chunk := 1; chunk <= 64; chunk++ {
		var got []int32
		p := frameParser{onFrame: func(xid int32) { got = append(got, xid) }}
		for b := stream; len(b) > 0; {
			n := min(chunk, len(b))
			p.feed(b[:n])
			b = b[n:]
		}
		if want := []int32{1, -2, 7, -1}; !slices.Equal(got, want) {
			t.Fatalf("chunks of %d: xids %v, want %v", chunk, got, want)
		}
	}
}

// TestCommitClock checks that, without a root, only the first Multi
// after arm is timed.
func TestCommitClock(t *testing.T) {
	var c commitClock
	c.onSend(1, opMulti, nil, 10) // not armed
	c.arm()
	c.onSend(2, opGetData, nil, 20)
	c.onSend(3, opMulti, nil, 30)
	c.onSend(4, opMulti, nil, 40) // the GC's Multi
	c.onReply(2, 45)
	c.onReply(3, 50)
	c.onReply(4, 60)
	if s, a := c.times(); s != 30 || a != 50 {
		t.Fatalf("sent %d acked %d, want 30 and 50", s, a)
	}
}

// multiBody encodes the start of a Multi request's body as go-zookeeper
// writes it: the first operation's header (type, done, err), then its
// path.
func multiBody(opType int32, path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(opType))
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	return append(append(b, path...), "data..."...)
}

// TestCommitClockRoot checks that, with a root, the clock times the last
// Multi starting with a SetData (or Create) of the root: the commit of a
// multi-mode publish, and 6e of a marker-mode one (after 6c, which also
// starts with the root), never GC's Multi (a Check of the root first),
// the blob stores (Creates elsewhere) or the items' Multis.
func TestCommitClockRoot(t *testing.T) {
	const root = "/r/x"
	c := commitClock{root: root}
	c.arm()
	c.onSend(2, opMulti, multiBody(opSetData, root), 20) // 6c: marker
	c.onReply(2, 25)
	c.onSend(3, opMulti, multiBody(13, root+"/invalid"), 30) // 6d: an item, Check first
	c.onReply(3, 35)
	c.onSend(4, opMulti, multiBody(opSetData, root+"x"), 38) // another root's
	c.onSend(5, opMulti, multiBody(opSetData, root), 40)     // 6e: the commit
	c.onReply(4, 44)
	c.onReply(5, 50)
	c.onSend(6, opMulti, multiBody(13, root), 60)              // GC
	c.onSend(7, opMulti, multiBody(opCreate, "/meta/b/1"), 70) // blobs
	c.onReply(6, 65)
	c.onReply(7, 75)
	if s, a := c.times(); s != 40 || a != 50 {
		t.Fatalf("sent %d acked %d, want 40 and 50 (the last Multi setting the root)", s, a)
	}
	c.arm()
	c.onSend(8, opMulti, multiBody(opCreate, root), 80) // a first generation
	c.onReply(8, 90)
	if s, a := c.times(); s != 80 || a != 90 {
		t.Fatalf("first generation: sent %d acked %d, want 80 and 90", s, a)
	}
	for _, body := range [][]byte{nil, {0, 0, 0, 5}, multiBody(opSetData, root)[:12]} {
		if multiSetsData(body, root) {
			t.Errorf("a truncated body %v counts as the commit", body)
		}
	}
}

func TestSummarize(t *testing.T) {
	var s []int64
	for i := 100; i >= 1; i-- {
		s = append(s, int64(i)*int64(time.Millisecond))
	}
	d := summarize(s)
	if d.N != 100 || d.P50 != 50 || d.P99 != 99 || d.Max != 100 || d.Mean != 50.5 {
		t.Fatalf("%+v", d)
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Fatalf("median %v", m)
	}
}
