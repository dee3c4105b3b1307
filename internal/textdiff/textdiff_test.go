package textdiff

import (
	"fmt"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"Equal", "x\n", "x\n", ""},
		{"FromEmpty", "", "a\nb\n", "--- A\n+++ B\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"ToEmpty", "a\n", "", "--- A\n+++ B\n@@ -1 +0,0 @@\n-a\n"},
		{"NewlineAtEOF", "a\nb", "a\nb\n", "--- A\n+++ B\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"BothWithoutNewline", "a\nb", "a\nc", "--- A\n+++ B\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{
			"TwoHunks",
			lines(20, func(i int) string { return fmt.Sprint(i) }),
			lines(20, func(i int) string {
				switch i {
				case 2:
					return "two"
				case 17:
					return "seventeen"
				}
				return fmt.Sprint(i)
			}),
			"--- A\n+++ B\n@@ -1,6 +1,6 @@\n 0\n 1\n-2\n+two\n 3\n 4\n 5\n" +
				"@@ -15,6 +15,6 @@\n 14\n 15\n 16\n-17\n+seventeen\n 18\n 19\n",
		},
		{
			"MergedHunk",
			"1\n2\n3\n4\n5\n6\n7\n8\n",
			"1\nX\n3\n4\n5\n6\nY\n8\n",
			"--- A\n+++ B\n@@ -1,8 +1,8 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n-7\n+Y\n 8\n",
		},
		{"Insertion", "a\nc\n", "a\nb\nc\n", "--- A\n+++ B\n@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified("A", "B", []byte(tc.a), []byte(tc.b)); got != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestUnifiedDiffHugeFallsBack checks that inputs too large for the LCS
// table still give a correct (if coarse) diff.
func TestUnifiedDiffHugeFallsBack(t *testing.T) {
	var a, b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	got := Unified("A", "B", []byte(a.String()), []byte(b.String()))
	if !strings.HasPrefix(got, "--- A\n+++ B\n@@ -1,5000 +1,5000 @@\n-a0\n") || strings.Count(got, "\n+b") != 5000 {
		t.Fatalf("fallback diff:\n%.200s", got)
	}
}

func TestBinarySummarised(t *testing.T) {
	got := Unified("old", "new", []byte("a\x00"), []byte("b"))
	if got != "Binary content old (2 bytes) and new (1 bytes) differ\n" {
		t.Fatalf("got %q", got)
	}
}

// TestHunks: the structured diff numbers lines on both sides, keeps
// Unified's context, counts changed lines, and gives nothing for binary
// content.
func TestHunks(t *testing.T) {
	hunks, added, removed, ok := Hunks([]byte("a\nb\nc\n"), []byte("a\nB\nc\nd\n"))
	if !ok || added != 2 || removed != 1 || len(hunks) != 1 {
		t.Fatalf("Hunks = %v, +%d -%d, %v", hunks, added, removed, ok)
	}
	want := []Line{{' ', 1, 1, "a"}, {'-', 2, 0, "b"}, {'+', 0, 2, "B"}, {' ', 3, 3, "c"}, {'+', 0, 4, "d"}}
	if len(hunks[0]) != len(want) {
		t.Fatalf("hunk = %+v", hunks[0])
	}
	for i, l := range hunks[0] {
		if l != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, l, want[i])
		}
	}
	if h, _, _, ok := Hunks([]byte("a"), []byte("a")); !ok || h != nil {
		t.Errorf("equal: %v %v", h, ok)
	}
	if h, _, _, ok := Hunks([]byte("a\x00"), []byte("b")); ok || h != nil {
		t.Errorf("binary: %v %v", h, ok)
	}
}
