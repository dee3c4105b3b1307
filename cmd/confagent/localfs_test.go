package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/agent"
)

// TestSwappedParentLinkNotWrittenThrough: a real confagent (apply:
// independent) renders a file target and a dir target below a directory
// other users may write to. After it started and applied generation 1,
// a directory on the way to each is replaced with a symbolic link to a
// directory of the agent's holding a file it may replace. Generation 2
// writes nothing through either link: each of those targets reports the
// link and why it is not followed, the file behind the link is intact,
// and the third target is applied.
func TestSwappedParentLinkNotWrittenThrough(t *testing.T) {
	e := newEnv(t)
	shared := filepath.Join(e.out, "shared")
	victim := filepath.Join(e.dir, "victim")
	for _, d := range []string{filepath.Join(shared, "linkdir"), filepath.Join(shared, "dirparent"), victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777); err != nil { // like a careless /srv/app
		t.Fatal(err)
	}
	precious := filepath.Join(victim, "important.conf")
	if err := os.WriteFile(precious, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileDest := filepath.Join(shared, "linkdir", "important.conf")
	targets := fmt.Sprintf(`  - name: f
    type: file
    item: important.conf
    dest: %s
  - name: d
    type: dir
    dest: %s
  - name: other
    type: file
    item: other.conf
    dest: %s
`, fileDest, filepath.Join(shared, "dirparent", "d"), filepath.Join(e.out, "other.conf"))
	cfg := strings.Replace(e.agentConfig("text", "debug", "", targets), "targets:\n", "apply: independent\ntargets:\n", 1)
	writeAtomic(t, e.cfgPath, cfg)
	gen := func(g int) map[string][]byte {
		return map[string][]byte{"important.conf": fmt.Appendf(nil, "v%d", g), "other.conf": fmt.Appendf(nil, "o%d", g)}
	}
	e.publish(t, gen(1))
	p := e.start(t)
	e.waitApplied(t, "agent-under-test", 1)
	if got, err := os.ReadFile(fileDest); err != nil || string(got) != "v1" {
		t.Fatalf("generation 1 not rendered: %q %v", got, err)
	}

	// What a user who may write to shared does once the agent runs.
	for _, name := range []string{"linkdir", "dirparent"} {
		if err := os.Rename(filepath.Join(shared, name), filepath.Join(shared, name+".orig")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(shared, name)); err != nil {
			t.Fatal(err)
		}
	}
	e.publish(t, gen(2))
	st := e.waitStatus(t, "agent-under-test", func(st agent.Status) bool {
		return len(st.Targets) == 3 && !slices.ContainsFunc(st.Targets, func(r agent.TargetResult) bool { return r.LastAttempt < 2 })
	})
	for _, r := range st.Targets {
		switch r.Name {
		case "other":
			if !r.OK || r.Generation != 2 {
				t.Errorf("the unrelated target was not applied: %+v", r)
			}
		default:
			link := filepath.Join(shared, map[string]string{"f": "linkdir", "d": "dirparent"}[r.Name])
			want := link + " is a symbolic link (to " + victim + ") in " + shared + ", which every user may write to (mode 0777): not followed, nothing written"
			if r.OK || r.Generation != 1 || !strings.Contains(r.LastError, want) {
				t.Errorf("target %s: %+v\nwant the error %q", r.Name, r, want)
			}
		}
	}
	if got, err := os.ReadFile(filepath.Join(e.out, "other.conf")); err != nil || string(got) != "o2" {
		t.Errorf("other.conf: %q %v", got, err)
	}
	if got, err := os.ReadFile(precious); err != nil || string(got) != "precious" {
		t.Fatalf("written through the link: %s holds %q (%v)", precious, got, err)
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 1 {
		t.Fatalf("something was created behind the link: %v", entries)
	}
	if got, _ := os.ReadFile(filepath.Join(shared, "linkdir.orig", "important.conf")); string(got) != "v1" {
		t.Errorf("the real directory changed: %q", got)
	}
	p.waitLog(t, "not followed")
}
