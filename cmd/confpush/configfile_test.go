package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "confpush.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runArgs(args ...string) outcome {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

// TestCLIConfigFileKeys: the --config file takes confagent's key names,
// still takes the old flag-named keys, and refuses unknown keys, every
// problem at once with a suggestion.
func TestCLIConfigFileKeys(t *testing.T) {
	refused := closedPort(t)
	bad := writeConfig(t, "zookeper:\n  servers: ["+refused+"]\nsesion-timeout: 5s\nbogus: 1\nzk: "+refused+
		"\nzookeeper:\n  servers: ["+refused+"]\n  tls: yes\n")
	runArgs("--config", bad, "history").want(t, exitUsage, "5 problems",
		`zookeper.servers: unknown key (did you mean "zookeeper.servers"?)`,
		`sesion-timeout: unknown key (did you mean "zookeeper.session_timeout"?)`,
		"bogus: unknown key",
		"zookeeper.tls: must be a mapping",
		"zookeeper.servers: the same setting as zk")

	srv := startZK(t)
	dir := writeFiles(t, t.TempDir(), map[string]string{"a": "a"})
	newNames := writeConfig(t, "zookeeper:\n  servers:\n    - "+srv.ConnString()+
		"\n  session_timeout: 10s\n  connect_timeout: 5s\nlog:\n  level: info\nroot: /new-names\njson: true\n")
	o := runArgs("--config", newNames, "publish", dir)
	o.want(t, 0, `"root": "/new-names"`)
	if o.stderr != "" && bytes.Contains([]byte(o.stderr), []byte("deprecated")) {
		t.Fatalf("new key names reported as deprecated: %s", o.stderr)
	}

	oldNames := writeConfig(t, "zk: "+srv.ConnString()+"\nsession-timeout: 10s\nlog-level: warn\nroot: /old-names\njson: true\n")
	runArgs("--config", oldNames, "publish", dir).want(t, 0, `"root": "/old-names"`,
		"deprecated key names", "zk (use zookeeper.servers)", "session-timeout (use zookeeper.session_timeout)")

	// Paths under the new names are relative to the file, as in confagent.
	cfg := writeConfig(t, "zookeeper:\n  servers: ["+srv.ConnString()+"]\n  tls:\n    ca_file: ca.pem\n")
	runArgs("--config", cfg, "history").want(t, exitUsage, filepath.Join(filepath.Dir(cfg), "ca.pem"))
}
