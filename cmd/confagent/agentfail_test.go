package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadEnvironmentValueBlamesTheVariable: a bad CONFAGENT_* value is
// reported under the variable's name, not as a key of the file (which
// holds nothing wrong).
func TestBadEnvironmentValueBlamesTheVariable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "confagent.yaml")
	if err := os.WriteFile(cfg, []byte("zookeeper:\n  servers: [127.0.0.1:2181]\nstale_after: 1m\ntargets:\n  - name: a\n    type: file\n    item: a\n    dest: "+filepath.Join(dir, "a")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONFAGENT_STALE_AFTER", "x")
	var out, errb bytes.Buffer
	code := run([]string{"check-config", "--config", cfg}, &out, &errb)
	if code != exitConfig {
		t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitConfig, out.String(), errb.String())
	}
	msg := errb.String()
	if !strings.Contains(msg, `CONFAGENT_STALE_AFTER: invalid duration "x"`) || !strings.Contains(msg, "(environment variable overriding stale_after)") {
		t.Fatalf("the variable is not blamed:\n%s", msg)
	}
	if strings.Contains(msg, "  - stale_after:") {
		t.Fatalf("the file's key is blamed:\n%s", msg)
	}
	t.Logf("stderr: %s", msg)
}
