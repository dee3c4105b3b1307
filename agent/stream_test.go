package agent_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/render"
)

// streamTemplate prints item "big" eight times, then item "x": with a
// 64 KiB "big" the output passes render.StreamSpill before "x" is read,
// so it is being written to its staged file when a missing "x" fails the
// render.
const streamTemplate = `{{ range until 8 }}{{ item "big" }}{{ end }}{{ item "x" }}`

// bigItems is a snapshot's items for streamTemplate: "big" of size bytes
// of fill, and "x" unless x is empty.
func bigItems(fill byte, size int, x string) map[string][]byte {
	items := map[string][]byte{"big": []byte(strings.Repeat(string(fill), size))}
	if x != "" {
		items["x"] = []byte(x)
	}
	return items
}

// published is a snapshot with a publish ID of its own: the renderer
// skips a snapshot whose publish ID it applied already, and NewSnapshot's
// have none.
type published struct{ agent.Snapshot }

func (s published) PublishID() string { return strconv.FormatInt(s.Generation(), 10) }

// snapOf is generation gen of items, as published.
func snapOf(gen int64, items map[string][]byte) agent.Snapshot {
	return published{agent.NewSnapshot(gen, items)}
}

// assertNoTemp fails when dir holds a temporary file of a write.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".zkconf-tmp") {
			t.Errorf("staged leftover %s in %s", e.Name(), dir)
		}
	}
}

// TestStreamedRenderErrorKeepsOutput: a template's output larger than
// render.StreamSpill is written to its staged file as it is rendered; a
// render that fails after that (a missing item) rejects the generation,
// leaves the applied output in place and removes the staged file. The
// next generation applies, and the check command examines its streamed
// output whole.
func TestStreamedRenderErrorKeepsOutput(t *testing.T) {
	dir := t.TempDir()
	dest := join(dir, "big.conf")
	spec := agent.TargetSpec{Name: "t", Kind: agent.KindTemplate, Template: streamTemplate, Dest: dest,
		Mode: 0o640, UID: -1, GID: -1,
		// The staged file, whole, before the swap: 8 × 64 KiB plus "x".
		Check: `test "$(wc -c < {{.src}})" -eq $((8 * 65536 + 2))`}
	r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := r.Apply(context.Background(), snapOf(1, bigItems('a', 64<<10, "x1"))); out.Err != nil {
		t.Fatal(out.Err)
	}
	applied := readFile(t, dest)
	if len(applied) <= render.StreamSpill || !strings.HasSuffix(applied, "x1") {
		t.Fatalf("generation 1's output is %d bytes (spill %d), ends %q", len(applied), render.StreamSpill, applied[max(0, len(applied)-4):])
	}

	out := r.Apply(context.Background(), snapOf(2, bigItems('b', 64<<10, "")))
	if out.Err == nil || !out.Rejected || !strings.Contains(out.Err.Error(), `"x"`) {
		t.Fatalf("generation 2 without x: rejected %v, err %v", out.Rejected, out.Err)
	}
	if got := readFile(t, dest); got != applied {
		t.Fatalf("the failed render changed the output (%d bytes, want generation 1's %d)", len(got), len(applied))
	}
	assertNoTemp(t, dir)
	if g := r.Applied().Generation(); g != 1 {
		t.Fatalf("applied generation %d after the failed render, want 1", g)
	}

	if out := r.Apply(context.Background(), snapOf(3, bigItems('c', 64<<10, "x3"))); out.Err != nil {
		t.Fatal(out.Err)
	}
	if got := readFile(t, dest); got != strings.Repeat("c", 8*64<<10)+"x3" {
		t.Fatalf("generation 3's output: %d bytes", len(got))
	}
	assertNoTemp(t, dir)
	// The same output again: nothing staged, nothing changed.
	if out := r.Apply(context.Background(), snapOf(4, bigItems('c', 64<<10, "x3"))); out.Err != nil || len(out.Changed) != 0 {
		t.Fatalf("an identical output: changed %v, err %v", out.Changed, out.Err)
	}
	assertNoTemp(t, dir)
}

// TestStreamedWriteFullDisk: a template output streamed to a file system
// that fills up in the middle of it fails the apply with a transient
// write error (retried, not a rejection), leaves the applied output in
// place and no staged file behind; once there is space the generation
// applies.
func TestStreamedWriteFullDisk(t *testing.T) {
	disk := mountTmpfs(t, "1m")
	dest := join(disk, "big.conf")
	spec := agent.TargetSpec{Name: "t", Kind: agent.KindTemplate, Template: streamTemplate, Dest: dest,
		Mode: 0o640, UID: -1, GID: -1}
	r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := r.Apply(context.Background(), snapOf(1, bigItems('a', 1<<10, "x1"))); out.Err != nil {
		t.Fatal(out.Err)
	}
	applied := readFile(t, dest)

	// 8 × 192 KiB = 1.5 MiB: past the spill, and past the disk.
	out := r.Apply(context.Background(), snapOf(2, bigItems('b', 192<<10, "x2")))
	if !errors.Is(out.Err, render.ErrTransient) || !errors.Is(out.Err, syscall.ENOSPC) || out.Rejected || !out.Retry {
		t.Fatalf("generation 2 on a full disk: rejected %v retry %v, err %v", out.Rejected, out.Retry, out.Err)
	}
	if got := readFile(t, dest); got != applied {
		t.Fatalf("the failed write changed the output (%d bytes)", len(got))
	}
	assertNoTemp(t, disk)
	if g := r.Applied().Generation(); g != 1 {
		t.Fatalf("applied generation %d after the failed write, want 1", g)
	}

	if out, err := exec.Command("mount", "-o", "remount,size=8m", disk).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	if out := r.Apply(context.Background(), snapOf(2, bigItems('b', 192<<10, "x2"))); out.Err != nil {
		t.Fatal(out.Err)
	}
	if got := readFile(t, dest); got != strings.Repeat("b", 8*192<<10)+"x2" {
		t.Fatalf("generation 2's output after the remount: %d bytes", len(got))
	}
	assertNoTemp(t, disk)
}
