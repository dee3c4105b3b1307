package config

import (
	"testing"
	"time"
)

// TestLoadWaitAndSplay: wait and reload_splay are off by default, decoded
// as durations, and wait.max defaults to four times wait.min.
func TestLoadWaitAndSplay(t *testing.T) {
	f := newFixture(t)
	c, err := Load(f.config(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Wait != (Wait{}) || c.ReloadSplay != 0 {
		t.Fatalf("defaults: wait %+v, reload_splay %v; want off", c.Wait, c.ReloadSplay)
	}
	c, err = Load(f.config(t, minimal+"wait:\n  min: 2s\n  max: 10s\nreload_splay: 5s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Wait != (Wait{Min: 2 * time.Second, Max: 10 * time.Second}) || c.ReloadSplay != 5*time.Second {
		t.Fatalf("wait %+v, reload_splay %v", c.Wait, c.ReloadSplay)
	}
	c, err = Load(f.config(t, minimal+"wait:\n  min: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Wait.Max != 12*time.Second {
		t.Fatalf("wait.max = %v, want 4 × min", c.Wait.Max)
	}
}

// TestLoadWaitBad: every problem of wait and reload_splay is reported at
// once, each under its key.
func TestLoadWaitBad(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"min above max", "wait:\n  min: 10s\n  max: 2s\nreload_splay: -1s\n",
			[]string{"reload_splay: must not be negative", "wait.max: 2s is less than wait.min 10s"}},
		{"max without min", "wait:\n  max: 5s\n", []string{"wait.min: required when wait.max is set"}},
		{"bad durations", "wait:\n  min: soon\n  max: 5\nreload_splay: 3\n",
			[]string{`wait.min: invalid duration "soon"`, `wait.max: invalid duration 5`, `reload_splay: invalid duration 3`}},
		{"negative", "wait:\n  min: -2s\n", []string{"wait.min: must not be negative"}},
		{"not a mapping", "wait: 5s\n", []string{"wait: must be a mapping"}},
		{"unknown key", "wait:\n  mni: 5s\n", []string{`wait.mni: unknown key (did you mean "wait.min"?)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(f.config(t, minimal+tt.yaml))
			assertProblems(t, err, tt.want)
		})
	}
}
