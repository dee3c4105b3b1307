package textdiff

import "testing"

func TestUnified(t *testing.T) {
	cases := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"change", "a\nb\nc\n", "a\nB\nc\n", "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"add to empty", "", "a\n", "--- old\n+++ new\n@@ -0,0 +1,1 @@\n+a\n"},
		{"remove all", "a\n", "", "--- old\n+++ new\n@@ -1,1 +0,0 @@\n-a\n"},
		{"no newline", "a", "b", "--- old\n+++ new\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{"binary", "a\x00", "b", "Binary content old (2 bytes) and new (1 bytes) differ\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- old\n+++ new\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
	}
	for _, c := range cases {
		if got := Unified("old", "new", []byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("%s:\ngot\n%q\nwant\n%q", c.name, got, c.want)
		}
	}
}
