package agent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/zkclient"
)

// mountTmpfs mounts a tmpfs of the given size on a new directory and
// unmounts it in t.Cleanup. The tests run as root; without the privilege
// the test fails (it does not skip itself).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs (the test needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

// unmount unmounts dir, failing the test when it stays busy. A file the
// kernel fsynced for the agent through AIO can keep the filesystem busy a
// clock tick after the agent closed it (its last reference is dropped by
// a kernel worker, deferred): no event says when, so a busy filesystem
// is retried for up to ten seconds; a descriptor the agent leaked (what
// this catches) keeps it busy for good.
func unmount(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("umount", dir).CombinedOutput()
		if err == nil {
			return
		}
		if !strings.Contains(string(out), "busy") || time.Now().After(deadline) {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func targetResult(s agent.Status, name string) agent.TargetResult {
	for _, tr := range s.Targets {
		if tr.Name == name {
			return tr
		}
	}
	return agent.TargetResult{}
}

// TestFullDiskRetriedUntilSpaceReturns: outputs on a 64 KiB tmpfs; a
// generation that does not fit fails with ENOSPC, which is reported as a
// transient write error (render.ErrTransient) in /readyz, the status
// node, metrics and the error, leaves no staged file or directory behind,
// and is retried with backoff; once the filesystem is enlarged the agent
// converges to the generation without a new publish. On the old code the
// failure was a "render" rejection, never retried.
func TestFullDiskRetriedUntilSpaceReturns(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	disk := mountTmpfs(t, "64k")
	specs := []agent.TargetSpec{
		dirSpec(join(disk, "d")),
		{Name: "big", Kind: agent.KindFile, Item: "big", Dest: join(disk, "big.conf"), Mode: 0o640, UID: -1, GID: -1},
	}
	mustPublish(t, p, map[string]string{"a": "small", "big": "small too"})
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs)
	r.waitGeneration(t, 1)
	big := strings.Repeat("0123456789abcdef", 200<<10/16) // 200 KiB
	mustPublish(t, p, map[string]string{"a": "small", "big": big})

	st := r.waitFor(t, "retried the transient write error", func(s agent.Status) bool {
		tr := targetResult(s, "dir")
		return tr.Retrying == agent.RetryTransient && tr.Retries >= 2
	})
	if st.Generation != 1 || st.Ready || !strings.Contains(st.NotReadyReason, "transient") {
		t.Fatalf("status while the disk is full: generation %d ready %v %q", st.Generation, st.Ready, st.NotReadyReason)
	}
	if tr := targetResult(st, "dir"); !strings.Contains(tr.LastError, "no space left on device") || tr.OK {
		t.Fatalf("dir target: %+v", tr)
	}
	err := r.d.Renderer().LastError()
	if !errors.Is(err, render.ErrTransient) || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "generation 2 not applied yet, retried") {
		t.Fatalf("error is not the transient class: %v", err)
	}
	var te *render.TransientError
	if !errors.As(err, &te) {
		t.Fatalf("error is not a *render.TransientError: %v", err)
	}
	// The old outputs stay, and nothing staged is left to fill the disk.
	if got := readFile(t, join(disk, "big.conf")); got != "small too" {
		t.Fatalf("big.conf = %q", got)
	}
	assertNoStaged := func() {
		t.Helper()
		for _, d := range []string{disk, join(disk, "d")} {
			entries, err := os.ReadDir(d)
			if err != nil {
				t.Fatal(err)
			}
			gens := 0
			for _, e := range entries {
				if strings.Contains(e.Name(), ".zkconf-tmp") || e.Name() == render.DataTmpLink {
					t.Errorf("staged leftover %s/%s after a failed write", d, e.Name())
				}
				if e.IsDir() && strings.HasPrefix(e.Name(), "..") && e.Name() != render.PoolDir {
					gens++
				}
			}
			if d != disk && gens != 1 {
				t.Errorf("%d generation directories in %s after a failed write, want 1", gens, d)
			}
		}
	}
	assertNoStaged()

	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	if code := status(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d with a full disk", code)
	}
	if body := get(t, srv.URL+"/readyz"); !strings.Contains(body, `target "dir": transient write error, retrying`) {
		t.Fatalf("/readyz does not name the transient error: %q", body)
	}
	metrics := get(t, srv.URL+"/metrics")
	for _, want := range []string{
		`zkconf_agent_target_retrying{class="transient",target="dir"} 1`,
		`zkconf_agent_retries_total{class="transient",target="dir"}`,
		`zkconf_agent_failures_total{kind="transient",target="dir"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %s:\n%s", want, grep(metrics, "zkconf_agent_"))
		}
	}
	r.waitFor(t, "reported the transient error in the status node", func(agent.Status) bool {
		b, _ := zkGet(t, c, layout.New(root, layout.DefaultMeta).StatusNode("test-agent"))
		var node agent.Status
		return json.Unmarshal(b, &node) == nil && targetResult(node, "dir").Retrying == agent.RetryTransient
	})

	// Space returns: the agent converges without a new publish.
	if out, err := exec.Command("mount", "-o", "remount,size=8m", disk).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	st = r.waitFor(t, "converged after the disk was enlarged", func(s agent.Status) bool {
		return s.Generation == 2 && s.Ready
	})
	if tr := targetResult(st, "dir"); tr.Retrying != "" || !tr.OK || tr.Generation != 2 {
		t.Fatalf("dir target after recovery: %+v", tr)
	}
	if got := readFile(t, join(disk, "big.conf")); got != big {
		t.Fatal("big.conf does not hold generation 2")
	}
	files, err := render.ReadCurrent(join(disk, "d"))
	if err != nil || string(files["big"]) != big || string(files["a"]) != "small" {
		t.Fatalf("dir after recovery: %d files, %v", len(files), err)
	}
	if !strings.Contains(get(t, srv.URL+"/metrics"), `zkconf_agent_target_retrying{class="transient",target="dir"} 0`) {
		t.Fatal("retrying gauge not cleared")
	}
}

// gracePeriodItems is a set of n items of generation g.
func gracePeriodItems(g, n int) map[string]string {
	items := map[string]string{}
	for i := range n {
		items[fmt.Sprintf("item-%02d", i+g)] = fmt.Sprintf("generation %d item %d\n", g, i)
	}
	return items
}

// TestDirGracePeriodKeepsResolvedSet: a reader that resolved ..data just
// before a swap still opens every file of the set it resolved, with that
// generation's content (the previous directory is kept for the grace
// period); once the grace period is over the directory is removed, by
// the running agent's timer and, for a directory left by an agent that
// stopped, by the next agent at start. The swap is the test's publish,
// not a timing accident; the grace period is shortened by a configuration
// reload rather than waited out. On the old code the previous directory
// was deleted during the swap (one observation of 450 missed an item).
func TestDirGracePeriodKeepsResolvedSet(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	d := join(t.TempDir(), "d")
	spec := func(grace time.Duration) []agent.TargetSpec {
		s := dirSpec(d)
		s.Grace = grace
		return []agent.TargetSpec{s}
	}
	reconfigure := func(r *running, grace time.Duration) {
		t.Helper()
		if _, err := r.d.Reconfigure(agent.Options{Root: root, ZK: zkclient.Config{Servers: c.Addrs(), SessionTimeout: 2 * time.Second},
			AgentID: "test-agent", Targets: spec(grace), StaleAfter: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(dir string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			_, err := os.Stat(dir)
			if errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("previous generation directory %s still there after its grace period: %v", dir, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	mustPublish(t, p, gracePeriodItems(1, 20))
	r := startDaemon(t, c.Addrs(), t.TempDir(), spec(time.Hour))
	r.waitGeneration(t, 1)
	// The reader resolves ..data once...
	resolved, err := render.CurrentPath(d)
	if err != nil {
		t.Fatal(err)
	}
	// ... then a swap happens (generation 2 shares no item with 1) ...
	mustPublish(t, p, gracePeriodItems(2, 20))
	r.waitGeneration(t, 2)
	if now, err := render.CurrentPath(d); err != nil || now == resolved {
		t.Fatalf("no swap: ..data -> %s (%v)", now, err)
	}
	// ... and the reader opens every file relative to what it resolved.
	for name, want := range gracePeriodItems(1, 20) {
		got, err := os.ReadFile(filepath.Join(resolved, name))
		if err != nil {
			t.Fatalf("reader of generation 1 after the swap: %v", err)
		}
		if string(got) != want {
			t.Fatalf("%s = %q, want %q", name, got, want)
		}
	}
	if files, err := render.ReadCurrent(d); err != nil || len(files) != 20 || string(files["item-02"]) != gracePeriodItems(2, 20)["item-02"] {
		t.Fatalf("current set: %d files, %v", len(files), err)
	}

	// The grace period ends (shortened by a reload of the
	// configuration): the running agent removes the directory.
	reconfigure(r, 10*time.Millisecond)
	gone(resolved)

	// A directory retired by an agent that then stops is removed by the
	// next agent, at start.
	reconfigure(r, time.Hour)
	gen2, err := render.CurrentPath(d)
	if err != nil {
		t.Fatal(err)
	}
	mustPublish(t, p, gracePeriodItems(3, 20))
	r.waitGeneration(t, 3)
	if _, err := os.Stat(gen2); err != nil {
		t.Fatalf("generation 2's directory removed within its grace period: %v", err)
	}
	r.stop()
	r = startDaemon(t, c.Addrs(), t.TempDir(), spec(10*time.Millisecond))
	r.waitGeneration(t, 3)
	gone(gen2)
	if files, err := render.ReadCurrent(d); err != nil || len(files) != 20 || string(files["item-03"]) != gracePeriodItems(3, 20)["item-03"] {
		t.Fatalf("current set after the restart: %d files, %v", len(files), err)
	}
}
