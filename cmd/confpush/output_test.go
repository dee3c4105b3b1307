package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// countingWriter records each Write call's bytes.
type countingWriter struct{ writes [][]byte }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

// TestPublishOutputOneWrite: a publish's text report, one line per item
// (here 100), reaches stdout in one write, whole and in order, instead of
// a write per line.
func TestPublishOutputOneWrite(t *testing.T) {
	srv := startZK(t)
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("item-%03d.conf", i)] = fmt.Sprintf("value %d\n", i)
	}
	dir := writeFiles(t, t.TempDir(), files)
	var out countingWriter
	var errb bytes.Buffer
	if code := run([]string{"--zk", srv.ConnString(), "--root", "/output/one", "publish", "--allow-open", dir}, &out, &errb); code != 0 {
		t.Fatalf("publish: exit %d, stderr %s", code, errb.String())
	}
	if len(out.writes) != 1 {
		t.Fatalf("stdout got %d writes, want 1 (the report in one write)", len(out.writes))
	}
	text := string(out.writes[0])
	if !strings.HasPrefix(text, "published generation 1 to /output/one") || !strings.Contains(text, ": 100 added, 0 changed, 0 removed\n") {
		t.Fatalf("report %q: want the publish's summary", text)
	}
	for i := range 100 {
		if !strings.Contains(text, fmt.Sprintf("  + item-%03d.conf\n", i)) {
			t.Fatalf("report lacks item-%03d.conf:\n%s", i, text)
		}
	}
	if strings.Count(text, "\n") != 101 {
		t.Fatalf("report has %d lines, want 101 (the summary and one per item):\n%s", strings.Count(text, "\n"), text)
	}
}
