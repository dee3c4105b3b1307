package agent_test

import (
	"fmt"
	"os"
	"testing"

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
