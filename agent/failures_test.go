package agent_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/agent/render"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
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
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
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
	c := zktest.Start(t)
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
	if !errors.Is(err, render.ErrTransient) || !errors.Is(err, syscall.ENOSPC) {
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
				if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
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
	if body := get(t, srv.URL+"/readyz"); !strings.Contains(body, "transient") {
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
