package main

import (
	"bytes"
	"runtime/debug"
	"testing"
)

// TestRelaxGCForPublish: a small set raises the collector's percentage for
// the publish; a set over shortPublishSetBytes, or GOGC in the
// environment, leaves the runtime's setting alone.
func TestRelaxGCForPublish(t *testing.T) {
	t.Setenv("GOGC", "")
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, c := range []struct {
		name  string
		env   string
		items map[string][]byte
		want  int
	}{
		{"small set", "", map[string][]byte{"a.conf": []byte("x"), "b.conf": bytes.Repeat([]byte("y"), 4096)}, shortPublishGCPercent},
		{"large set", "", map[string][]byte{"a.conf": make([]byte, shortPublishSetBytes), "b.conf": []byte("x")}, 100},
		{"GOGC set", "150", map[string][]byte{"a.conf": []byte("x")}, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.env)
			debug.SetGCPercent(100)
			relaxGCForPublish(c.items)
			if got := debug.SetGCPercent(100); got != c.want {
				t.Errorf("GC percent %d, want %d", got, c.want)
			}
		})
	}
}
