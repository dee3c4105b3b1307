package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentErrors covers confagent's bad inputs that docs/errors.md lists
// and no other test pins: each exits with its code and message, and
// nothing is written to the targets.
func TestAgentErrors(t *testing.T) {
	runAgent := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String(), errb.String()
	}

	t.Run("BadFlag", func(t *testing.T) {
		code, _, stderr := runAgent("--bogus")
		if code != exitUsage || !strings.Contains(stderr, "unknown flag: --bogus") {
			t.Fatalf("exit %d, stderr %q; want %d and the unknown flag", code, stderr, exitUsage)
		}
	})

	t.Run("MissingConfigFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope.yaml")
		code, _, stderr := runAgent("--config", path, "--once")
		if code != exitConfig || stderr != "config: read: open "+path+": no such file or directory\n" {
			t.Fatalf("exit %d, stderr %q; want %d and the missing file, named once", code, stderr, exitConfig)
		}
		t.Logf("stderr: %s", stderr)
	})

	t.Run("UnreachableZooKeeper", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		cfg := filepath.Join(dir, "confagent.yaml")
		writeAtomic(t, cfg, fmt.Sprintf(`zookeeper:
  servers: [127.0.0.1:1]
  session_timeout: 2s
root: /config
state_dir: %s
agent_id: unreachable
http:
  listen: ""
targets:
  - name: d
    type: dir
    dest: %s
`, filepath.Join(dir, "state"), filepath.Join(out, "d")))
		// Fails fast, naming the server and its cause, long before the
		// timeout (the old message came after the whole --timeout:
		// "no live generation from ZooKeeper (state starting: cache: no
		// ZooKeeper session)").
		code, stdout, stderr := runAgent("--config", cfg, "--once", "--timeout", "5m")
		if code != exitError || !strings.Contains(stderr, "confagent: cannot reach ZooKeeper: 127.0.0.1:1: connection refused\n") {
			t.Fatalf("exit %d, stderr %q; want %d and the server with its cause", code, stderr, exitError)
		}
		if stdout != "" {
			t.Fatalf("stdout %q, want nothing", stdout)
		}
		if _, err := os.Lstat(out); !os.IsNotExist(err) {
			t.Fatalf("an unreachable ZooKeeper wrote the target: %v", err)
		}
		t.Logf("stderr: %s", stderr)
	})

	t.Run("UnwritableTargetDirectory", func(t *testing.T) {
		e := newEnv(t)
		e.publish(t, set(1, 2))
		// The targets' parent is a regular file: no directory can be made
		// below it, for root too (chmod would not stop root).
		const content = "not a directory\n"
		if err := os.WriteFile(e.out, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runAgent("--config", e.cfgPath, "--once", "--timeout", "30s")
		// Both targets fail, each reported (internal/errlist's list).
		if code != exitError || !strings.Contains(stderr, "confagent: 2 problems:\n  - generation 1 rejected: target \"d\": render: mkdir "+e.out+": not a directory") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want %d and not a directory", code, stdout, stderr, exitError)
		}
		// Each layer names its context once: no "render: render:".
		if strings.Contains(stderr, "render: render:") {
			t.Fatalf("stuttered message: %q", stderr)
		}
		if got, err := os.ReadFile(e.out); err != nil || string(got) != content {
			t.Fatalf("the target's parent changed: %q %v", got, err)
		}
		t.Logf("stderr: %s", stderr)
	})
}
