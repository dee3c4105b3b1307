package agent_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/publish"
)

// TestDriftBeforeWatchRepaired: a change made to a new generation
// directory before the drift watcher watches it (here by the dir target's
// reload command, which runs after the swap and before the watch) is
// repaired by the pass that follows the new watch, as is a template
// output edited the same way, at every publish. The daemon runs that pass
// right after the apply, in the apply's own wake-up; it must still see
// every such change.
func TestDriftBeforeWatchRepaired(t *testing.T) {
	p, d, tmpl, r := startDirAndTemplate(t, func(d, tmpl string) string {
		return fmt.Sprintf("printf edited > %s && printf edited > %s", join(d, "a"), tmpl)
	})
	for g := int64(1); g <= 3; g++ {
		a, b := fmt.Sprintf("a%d", g), fmt.Sprintf("b%d", g)
		mustPublish(t, p, map[string]string{"a": a, "b": b})
		r.waitGeneration(t, g)
		r.waitFor(t, fmt.Sprintf("repaired generation %d's edited outputs", g), func(agent.Status) bool {
			files, err := render.ReadCurrent(d)
			if err != nil || string(files["a"]) != a {
				return false
			}
			got, err := readFileErr(tmpl)
			return err == nil && got == b
		})
	}
}

// TestDriftNewGenerationRepaired: a dir target's file changed in its new
// generation directory before that directory is watched (here by the
// check command, in the staged directory the swap then makes current),
// with no event in any directory watched before, is repaired by the check
// that follows the new watch: the one place where that check must still
// look. The first publish is left alone, so that no pass is due from an
// earlier repair when the second is applied.
func TestDriftNewGenerationRepaired(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	d, marker := join(out, "d"), join(out, "edit")
	dir := dirSpec(d)
	dir.Check = fmt.Sprintf("if [ -e %s ]; then rm %s && printf edited > {{.src}}/a; fi", marker, marker)
	// The previous generation is kept (its removal, in a watched
	// directory, would be an event and a pass of its own).
	dir.Grace = time.Hour
	r := startDaemon(t, c.Addrs(), t.TempDir(), []agent.TargetSpec{dir})
	mustPublish(t, p, map[string]string{"a": "a1", "b": "b1"})
	r.waitGeneration(t, 1)
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Every item changes: no file is linked from the previous generation
	// (whose watched directory would see the link).
	mustPublish(t, p, map[string]string{"a": "a2", "b": "b2"})
	r.waitGeneration(t, 2)
	r.waitFor(t, "the edited file repaired", func(agent.Status) bool {
		files, err := render.ReadCurrent(d)
		return err == nil && string(files["a"]) == "a2"
	})
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the check command did not edit the staged set: %v", err)
	}
}

// TestDriftOutsideNewWatchesRepaired: the pass after an apply checks only
// the directories the apply's new watches cover (a dir target's new
// generation directory); a change the apply's window saw elsewhere, here
// a dir target's top-level link removed and a template output replaced by
// the reload command, both in directories watched throughout, is still
// repaired: their events ask for a pass of their own.
func TestDriftOutsideNewWatchesRepaired(t *testing.T) {
	p, d, tmpl, r := startDirAndTemplate(t, func(d, tmpl string) string {
		return fmt.Sprintf("rm %s && printf edited > %s.new && mv %s.new %s", join(d, "b"), tmpl, tmpl, tmpl)
	})
	for g := int64(1); g <= 3; g++ {
		a, b := fmt.Sprintf("a%d", g), fmt.Sprintf("b%d", g)
		mustPublish(t, p, map[string]string{"a": a, "b": b})
		r.waitGeneration(t, g)
		r.waitFor(t, fmt.Sprintf("repaired generation %d's link and template", g), func(agent.Status) bool {
			got, err := readFileErr(join(d, "b"))
			if err != nil || got != b {
				return false
			}
			got, err = readFileErr(tmpl)
			return err == nil && got == b
		})
	}
}

// startDirAndTemplate starts a daemon with a dir target d, whose reload
// command is reload(d, tmpl), and a template target tmpl of item "b".
func startDirAndTemplate(t *testing.T, reload func(d, tmpl string) string) (*publish.Publisher, string, string, *running) {
	t.Helper()
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	d, tmpl := join(out, "d"), join(out, "t.conf")
	dir := dirSpec(d)
	dir.Reload = reload(d, tmpl)
	specs := []agent.TargetSpec{dir,
		{Name: "tmpl", Kind: agent.KindTemplate, Template: `{{ item "b" }}`, Dest: tmpl, Mode: 0o640, UID: -1, GID: -1}}
	return p, d, tmpl, startDaemon(t, c.Addrs(), t.TempDir(), specs)
}

func readFileErr(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}
