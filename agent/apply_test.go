package agent_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/render"
)

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func manyItems(n int, changed string) map[string]string {
	items := map[string]string{}
	for i := range n {
		items[fmt.Sprintf("item-%02d.conf", i)] = strings.Repeat(fmt.Sprintf("item %d\n", i), 100)
	}
	if changed != "" {
		items["item-07.conf"] = changed
	}
	return items
}

// TestApplyRewritesOnlyChangedItems: publishing one changed item of 30
// rewrites only its file (the 29 others keep their inode, hard-linked
// into the new generation directory); a drift repair that finds nothing
// writes nothing; an unchanged file edited by hand is still restored, and
// so are file and template outputs (a template rendered again from the
// applied snapshot: only its digest is kept).
func TestApplyRewritesOnlyChangedItems(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	d := join(out, "d")
	specs := []agent.TargetSpec{
		dirSpec(d),
		{Name: "one", Kind: agent.KindFile, Item: "item-03.conf", Dest: join(out, "one.conf"), Mode: 0o640, UID: -1, GID: -1},
		{Name: "tmpl", Kind: agent.KindTemplate, Template: `{{ item "item-04.conf" }}`, Dest: join(out, "t.conf"), Mode: 0o640, UID: -1, GID: -1},
	}
	mustPublish(t, p, manyItems(30, ""))
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs)
	r.waitGeneration(t, 1)
	before := map[string]uint64{}
	for name := range manyItems(30, "") {
		before[name] = inodeOf(t, join(d, name))
	}
	gen1, err := render.CurrentPath(d)
	if err != nil {
		t.Fatal(err)
	}
	oneIno, tmplIno := inodeOf(t, join(out, "one.conf")), inodeOf(t, join(out, "t.conf"))

	mustPublish(t, p, manyItems(30, "changed\n"))
	r.waitGeneration(t, 2)
	gen2, err := render.CurrentPath(d)
	if err != nil || gen2 == gen1 {
		t.Fatalf("generation directory %s -> %s (%v): no swap", gen1, gen2, err)
	}
	for name, ino := range before {
		got := inodeOf(t, join(d, name))
		if name == "item-07.conf" {
			if got == ino {
				t.Errorf("%s: changed item kept its inode", name)
			}
			if b := readFile(t, join(d, name)); b != "changed\n" {
				t.Errorf("%s = %q", name, b)
			}
		} else if got != ino {
			t.Errorf("%s: unchanged item rewritten (inode %d -> %d)", name, ino, got)
		}
	}
	if inodeOf(t, join(out, "one.conf")) != oneIno || inodeOf(t, join(out, "t.conf")) != tmplIno {
		t.Error("unchanged file or template output rewritten")
	}

	// No drift: a repair pass writes nothing (no new generation
	// directory, no new inode, not even a staged one in between).
	if fixed := r.d.Renderer().Repair(); len(fixed) != 0 {
		t.Fatalf("repair without drift fixed %v", fixed)
	}
	if now, _ := render.CurrentPath(d); now != gen2 {
		t.Fatalf("repair without drift swapped %s -> %s", gen2, now)
	}
	entries, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	gens := 0
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..") && e.Name() != render.PoolDir {
			gens++
		}
	}
	if gens != 1 {
		t.Fatalf("%d generation directories after a repair without drift", gens)
	}

	// Drift in an unchanged (hard-linked) file, in place: restored.
	if err := os.WriteFile(join(d, "item-11.conf"), []byte("edited by hand\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "restored the edited unchanged item", func(agent.Status) bool {
		files, err := render.ReadCurrent(d)
		return err == nil && string(files["item-11.conf"]) == manyItems(30, "")["item-11.conf"]
	})
	// Drift in file and template outputs: restored from what was
	// applied.
	for _, f := range []string{"one.conf", "t.conf"} {
		if err := os.WriteFile(join(out, f), []byte("edited\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	want := manyItems(30, "")
	r.waitFor(t, "restored the file and template outputs", func(agent.Status) bool {
		a, errA := os.ReadFile(join(out, "one.conf"))
		b, errB := os.ReadFile(join(out, "t.conf"))
		return errA == nil && errB == nil && string(a) == want["item-03.conf"] && string(b) == want["item-04.conf"]
	})
}
