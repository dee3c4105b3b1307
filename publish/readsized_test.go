package publish

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"
)

// TestReadSized: whatever size the file had when it was opened (the same,
// smaller or larger than what is read now, or a nonsense value), readSized
// returns what the reader holds, cut at most bytes; a read error is
// returned; and a file that did not change is read into one buffer.
func TestReadSized(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 1024, 5000} {
		data := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		for _, size := range []int64{0, int64(n), int64(n) - 1, int64(n) + 7, 1 << 40, math.MaxInt64, -3} {
			for _, most := range []int64{int64(n) + 1, int64(n), int64(n)/2 + 1, 1} {
				got, err := readSized(iotest.HalfReader(bytes.NewReader(data)), size, most)
				if err != nil {
					t.Fatalf("n %d size %d most %d: %v", n, size, most, err)
				}
				want := data[:min(int64(n), most)]
				if !bytes.Equal(got, want) {
					t.Fatalf("n %d size %d most %d: read %d bytes, want %d", n, size, most, len(got), len(want))
				}
			}
		}
	}
	boom := errors.New("boom")
	if _, err := readSized(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom)), 3, 100); !errors.Is(err, boom) {
		t.Errorf("read error: got %v, want %v", err, boom)
	}
	data := bytes.Repeat([]byte("x"), 1024)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := readSized(bytes.NewReader(data), int64(len(data)), 1<<20); err != nil {
			t.Fatal(err)
		}
	})
	// The buffer, the LimitReader and the bytes.Reader (io.ReadAll made it
	// 6: its buffer grows three times for 1 KiB).
	if allocs > 3 {
		t.Errorf("an unchanged 1 KiB file took %.0f allocations, want at most 3", allocs)
	}
}
