package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteVecAt writes more buffers than one pwritev takes (IOV_MAX),
// empty ones among them (a whole batch of them first), at an offset, and
// reads back their concatenation there.
func TestWriteVecAt(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "pack"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bufs := make([][]byte, 1100)
	var want []byte
	for i := range 2500 {
		b := bytes.Repeat([]byte{byte(i)}, i%7)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	const off = 100
	if err := writeVecAt(f, bufs, off); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != off+len(want) || !bytes.Equal(got[off:], want) || !bytes.Equal(got[:off], make([]byte, off)) {
		t.Fatalf("file holds %d bytes, want %d zero bytes then the %d bytes written", len(got), off, len(want))
	}
}

// TestSkipWritten drops what a short write wrote: whole buffers, part of
// one, and the empty buffers that then lead.
func TestSkipWritten(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, []string{"ab", "", "cde", "f"}},
		{1, []string{"b", "", "cde", "f"}},
		{2, []string{"cde", "f"}},
		{4, []string{"e", "f"}},
		{5, []string{"f"}},
		{6, nil},
	} {
		bufs := [][]byte{[]byte("ab"), {}, []byte("cde"), []byte("f")}
		got := skipWritten(bufs, tc.n)
		var gs []string
		for _, b := range got {
			gs = append(gs, string(b))
		}
		if len(gs) != len(tc.want) {
			t.Errorf("skipWritten(%d) = %q, want %q", tc.n, gs, tc.want)
			continue
		}
		for i := range gs {
			if gs[i] != tc.want[i] {
				t.Errorf("skipWritten(%d) = %q, want %q", tc.n, gs, tc.want)
				break
			}
		}
	}
}
