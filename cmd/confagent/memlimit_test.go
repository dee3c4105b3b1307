package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cmd/internal/config"
)

// TestMemoryLimitOption: memory_limit's default (auto) reaches the daemon
// as auto, although the agent package's zero value is off, and "off"
// reaches it as off. The configuration holds the agent package's values
// (no conversion that could swap them).
func TestMemoryLimitOption(t *testing.T) {
	dir := t.TempDir()
	for key, want := range map[string]int64{
		"":                    agent.MemoryLimitAuto,
		"memory_limit: auto":  agent.MemoryLimitAuto,
		"memory_limit: off":   agent.MemoryLimitOff,
		"memory_limit: 64MiB": 64 << 20,
	} {
		path := filepath.Join(dir, "confagent.yaml")
		cfg := fmt.Sprintf("zookeeper:\n  servers: [127.0.0.1:2181]\nroot: /config\nstate_dir: %s\n%s\ntargets:\n  - name: d\n    type: dir\n    dest: %s\n",
			filepath.Join(dir, "state"), key, filepath.Join(dir, "out"))
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path)
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		opts, err := options(c, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		if opts.MemoryLimit != want {
			t.Errorf("%q: the daemon gets memory limit %d, want %d", key, opts.MemoryLimit, want)
		}
		if opts.Apply != agent.ApplyAll {
			t.Errorf("%q: apply %q, want the default %q", key, opts.Apply, agent.ApplyAll)
		}
	}
}
