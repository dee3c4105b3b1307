package zktest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestClassArchive: the first start creates the class archive in the
// user's cache directory and servers map it; a damaged archive is not
// handed out, and a server started from one anyway (cut short, which
// makes the JVM crash rather than refuse it) costs a plain start, never a
// failed test, and the archive is not used again.
func TestClassArchive(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	java := classArchive()
	if java.archive == "" || !usableArchive(java.archive) {
		t.Fatalf("no class archive was created: %+v", java)
	}
	c := startWith(t, Options{Size: 1}, java)
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(c.PID(0)) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(maps), java.archive) {
		t.Fatalf("the server did not map the class archive %s", java.archive)
	}

	b, err := os.ReadFile(java.archive)
	if err != nil {
		t.Fatal(err)
	}
	cut := java.archive + ".cut"
	if err := os.WriteFile(cut, b[:len(b)/10], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cut, java.archive); err != nil {
		t.Fatal(err)
	}
	if usableArchive(java.archive) {
		t.Fatal("a cut archive passes as usable")
	}
	c = startWith(t, Options{Size: 1}, java)
	if m, err := c.Mode(0); err != nil || m != "standalone" {
		t.Fatalf("mode after a damaged archive = %q, %v; want standalone", m, err)
	}
	if again := classArchive(); again.archive != "" {
		t.Fatalf("the damaged archive is used again: %+v", again)
	}
}
