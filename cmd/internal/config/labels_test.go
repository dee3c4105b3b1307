package config

import (
	"strings"
	"testing"
)

// TestLoadLabels: labels are decoded as strings (Kubernetes syntax, keys
// with a DNS prefix included); every bad key and value is reported at once
// and the configuration is refused.
func TestLoadLabels(t *testing.T) {
	f := newFixture(t)
	c, err := Load(f.config(t, minimal+"\nlabels:\n  role: web\n  zone: eu-1\n  example.com/tier: \"2\"\n  canary: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"role": "web", "zone": "eu-1", "example.com/tier": "2", "canary": "true"}
	if len(c.Labels) != len(want) {
		t.Fatalf("labels = %v", c.Labels)
	}
	for k, v := range want {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	_, err = Load(f.config(t, minimal+"\nlabels:\n  \"-bad\": x\n  ok: \"has space\"\n  \"Bad_Prefix/x\": y\n  agent: me\n"))
	if err == nil {
		t.Fatal("bad labels accepted")
	}
	for _, s := range []string{`"-bad"`, `value of "ok"`, `bad_prefix/x`, `key "agent" is reserved`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %s", err, s)
		}
	}
}
