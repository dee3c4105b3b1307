package main

import (
	"bytes"
	"runtime/debug"
	"testing"
)

// TestRelaxGCForPublish: the collector's percentage is raised before the
// set is read (the session's dial allocates meanwhile) and stays raised
// for a small set; a set over shortPublishSetBytes puts the runtime's
// setting back once it is read; GOGC in the environment leaves the
// runtime's setting alone throughout.
func TestRelaxGCForPublish(t *testing.T) {
	t.Setenv("GOGC", "")
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, c := range []struct {
		name         string
		env          string
		items        map[string][]byte
		before, want int
	}{
		{"small set", "", map[string][]byte{"a.conf": []byte("x"), "b.conf": bytes.Repeat([]byte("y"), 4096)}, shortPublishGCPercent, shortPublishGCPercent},
		{"large set", "", map[string][]byte{"a.conf": make([]byte, shortPublishSetBytes), "b.conf": []byte("x")}, shortPublishGCPercent, 100},
		{"GOGC set", "150", map[string][]byte{"a.conf": []byte("x")}, 100, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.env)
			debug.SetGCPercent(100)
			settle := relaxGCForPublish()
			got := debug.SetGCPercent(-1)
			debug.SetGCPercent(got)
			if got != c.before {
				t.Errorf("GC percent before the set is read %d, want %d", got, c.before)
			}
			settle(c.items)
			if got := debug.SetGCPercent(100); got != c.want {
				t.Errorf("GC percent after the set is read %d, want %d", got, c.want)
			}
		})
	}
}
