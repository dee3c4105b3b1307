package agent_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/zktest"
)

// TestPublishChangeRemove: files appear with the right mode, a change is
// swapped in, a removed item's file goes, and a template renders values
// parsed from JSON and YAML items.
func TestPublishChangeRemove(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	tmpl := `port={{ (json "app.json").port }} name={{ (yaml "svc.yaml").name }} gen={{ generation }}
{{ range names }}{{ . }} {{ end }}`
	specs := []agent.TargetSpec{
		dirSpec(join(out, "d")),
		{Name: "one", Kind: agent.KindFile, Item: "app.json", Dest: join(out, "app.json"), Mode: 0o600, UID: -1, GID: -1},
		{Name: "tmpl", Kind: agent.KindTemplate, Template: tmpl, Dest: join(out, "rendered.conf"), Mode: 0o644, UID: -1, GID: -1},
	}
	mustPublish(t, p, map[string]string{"app.json": `{"port": 8080}`, "svc.yaml": "name: web\n", "extra": "x"})
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs)
	r.waitGeneration(t, 1)

	if got := readFile(t, join(out, "d/extra")); got != "x" {
		t.Fatalf("dir item = %q", got)
	}
	if m := mode(t, join(out, "d/extra")); m != 0o640 {
		t.Fatalf("dir item mode %o", m)
	}
	if m := mode(t, join(out, "app.json")); m != 0o600 {
		t.Fatalf("file mode %o", m)
	}
	if got := readFile(t, join(out, "rendered.conf")); got != "port=8080 name=web gen=1\napp.json extra svc.yaml " {
		t.Fatalf("template = %q", got)
	}

	mustPublish(t, p, map[string]string{"app.json": `{"port": 9090}`, "svc.yaml": "name: api\n"})
	r.waitGeneration(t, 2)
	if got := readFile(t, join(out, "rendered.conf")); !strings.HasPrefix(got, "port=9090 name=api gen=2\n") {
		t.Fatalf("template after change = %q", got)
	}
	if _, err := os.Lstat(join(out, "d/extra")); !os.IsNotExist(err) {
		t.Fatalf("removed item's file still there: %v", err)
	}
	files, err := render.ReadCurrent(join(out, "d"))
	if err != nil || len(files) != 2 || string(files["app.json"]) != `{"port": 9090}` {
		t.Fatalf("dir after change = %v, %v", files, err)
	}
	// The status node in ZooKeeper says what was applied. It is written
	// off the apply path (a one-slot channel feeds its writer), so it may
	// lag the files: wait for it.
	waitStatusNode(t, c.Connect(t, 4*time.Second), "test-agent", func(s fleet.Status) bool {
		return s.Generation == 2 && s.AgentID == "test-agent"
	})
}

// TestCheckFailureKeepsOldAndReloadOnce: a failing check keeps the old
// files and reports in /status and metrics; reload runs exactly once per
// applied change and never for unchanged output.
func TestCheckFailureKeepsOldAndReloadOnce(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	reloads := filepath.Join(t.TempDir(), "reloads")
	specs := []agent.TargetSpec{{
		Name: "conf", Kind: agent.KindFile, Item: "app.conf", Dest: join(out, "app.conf"), Mode: 0o640, UID: -1, GID: -1,
		// The check refuses any content containing "BAD".
		Check:  `! grep -q BAD {{.src}}`,
		Reload: "echo reload >> " + reloads,
	}, dirSpec(join(out, "d"))}
	mustPublish(t, p, map[string]string{"app.conf": "good 1", "other": "a"})
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs)
	r.waitGeneration(t, 1)
	countReloads := func() int {
		b, _ := os.ReadFile(reloads)
		return strings.Count(string(b), "reload")
	}
	if n := countReloads(); n != 1 {
		t.Fatalf("%d reloads after the first apply, want 1", n)
	}

	// A change to an item this target does not render: no reload.
	mustPublish(t, p, map[string]string{"app.conf": "good 1", "other": "b"})
	r.waitGeneration(t, 2)
	if n := countReloads(); n != 1 {
		t.Fatalf("%d reloads after an unchanged output, want 1", n)
	}

	// A bad generation: rejected, old files stay (both targets: all-or-nothing).
	mustPublish(t, p, map[string]string{"app.conf": "BAD 3", "other": "c"})
	st := r.waitFor(t, "reported the check failure", func(s agent.Status) bool { return strings.Contains(s.LastError, "check") })
	if got := readFile(t, join(out, "app.conf")); got != "good 1" {
		t.Fatalf("failing check replaced the file: %q", got)
	}
	if got := readFile(t, join(out, "d/other")); got != "b" {
		t.Fatalf("failing check of one target let another move on: %q", got)
	}
	if st.Generation != 2 || st.Ready {
		t.Fatalf("status after rejection: generation %d ready %v", st.Generation, st.Ready)
	}
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	body := get(t, srv.URL+"/status")
	if !strings.Contains(body, "check") || !strings.Contains(body, `"ok": false`) {
		t.Fatalf("/status does not report the failure:\n%s", body)
	}
	if code := status(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d after a rejected generation", code)
	}
	metrics := get(t, srv.URL+"/metrics")
	if !strings.Contains(metrics, `zkconf_agent_failures_total{kind="check",target="conf"} 1`) {
		t.Fatalf("metrics do not count the check failure:\n%s", grep(metrics, "zkconf_agent_failures"))
	}

	// The next good generation applies and reloads once.
	mustPublish(t, p, map[string]string{"app.conf": "good 4", "other": "d"})
	r.waitGeneration(t, 4)
	if n := countReloads(); n != 2 {
		t.Fatalf("%d reloads, want 2", n)
	}
	if code := status(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d after recovery", code)
	}
	if !strings.Contains(get(t, srv.URL+"/metrics"), "zkconf_agent_generation 4") {
		t.Fatal("metrics generation not 4")
	}
}

// TestRapidPublishesNeverMixGenerations: a hundred back-to-back publishes
// of a 40-item set while readers observe the dir target (through one
// resolved ..data) and the template target: every observation is one
// generation, and the last generation is rendered. A hundred is enough:
// an output rewritten in place (the live set of a dir target written
// into, a template truncated before its write) shows as hundreds or
// dozens of violations in them; more publishes only cost CPU (300 were
// half of the package's).
func TestRapidPublishesNeverMixGenerations(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := t.TempDir()
	const items, publishes = 40, 100
	tmpl := `{{ range names }}{{ item . }};{{ end }}`
	specs := []agent.TargetSpec{
		dirSpec(join(out, "d")),
		{Name: "tmpl", Kind: agent.KindTemplate, Template: tmpl, Dest: join(out, "all.txt"), Mode: 0o644, UID: -1, GID: -1},
	}
	set := func(g int) map[string]string {
		m := map[string]string{}
		for i := 0; i < items; i++ {
			m[fmt.Sprintf("item%02d", i)] = fmt.Sprintf("gen=%d item=%d", g, i)
		}
		return m
	}
	mustPublish(t, p, set(1))
	r := startDaemon(t, c.Addrs(), t.TempDir(), specs, func(o *agent.Options) { o.Logger = nil })
	r.waitGeneration(t, 1)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var observations, violations atomic.Int64
	var firstViolation atomic.Value
	record := func(v string) {
		if violations.Add(1) == 1 {
			firstViolation.Store(v)
		}
	}
	wg.Add(2)
	go func() { // dir reader
		defer wg.Done()
		for !stop.Load() {
			files, err := render.ReadCurrent(join(out, "d"))
			if err != nil {
				continue // a swap between readlink and open: retry, as consumers must
			}
			if g := oneGeneration(files); g < 0 || len(files) != items {
				record(fmt.Sprintf("dir observation mixes generations or is incomplete: %d files", len(files)))
			}
			observations.Add(1)
			pace()
		}
	}()
	go func() { // template reader
		defer wg.Done()
		for !stop.Load() {
			b, err := os.ReadFile(join(out, "all.txt"))
			if err != nil {
				record("template output missing: " + err.Error())
				continue
			}
			parts := strings.Split(strings.TrimSuffix(string(b), ";"), ";")
			m := map[string][]byte{}
			for i, s := range parts {
				m[strconv.Itoa(i)] = []byte(s)
			}
			if len(parts) != items || oneGeneration(m) < 0 {
				record(fmt.Sprintf("template observation mixes generations: %.80q", b))
			}
			observations.Add(1)
			pace()
		}
	}()
	var last int64
	for g := 2; g <= publishes; g++ {
		last = mustPublish(t, p, set(g)).Generation
	}
	r.waitGeneration(t, last)
	stop.Store(true)
	wg.Wait()
	if v := violations.Load(); v > 0 {
		t.Fatalf("%d violations in %d observations; first: %v", v, observations.Load(), firstViolation.Load())
	}
	files, err := render.ReadCurrent(join(out, "d"))
	if err != nil || oneGeneration(files) != int(last) {
		t.Fatalf("final dir is not generation %d: %v", last, err)
	}
	t.Logf("%d observations, 0 violations, %d publishes", observations.Load(), publishes)
}

// pace keeps the observers from starving the agent and the server of the
// machine's two cores; it paces, it does not synchronise.
func pace() { time.Sleep(200 * time.Microsecond) }

// oneGeneration returns the generation every value names ("gen=N ..."), or
// -1 when they differ or one names none (an empty or torn file).
func oneGeneration(files map[string][]byte) int {
	g := -1
	for _, b := range files {
		n, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(string(b), " ", 2)[0], "gen="))
		if err != nil || (g >= 0 && n != g) {
			return -1
		}
		g = n
	}
	return g
}

// TestRestartWithZooKeeperDownServesPersisted: an agent restarted while
// ZooKeeper is down renders its persisted generation at once; a file
// deleted by hand is restored.
func TestRestartWithZooKeeperDownServesPersisted(t *testing.T) {
	t.Parallel() // a server of its own (sharedZooKeeper)
	c := zktest.Start(t)
	p := publisher(t, c)
	out, state := t.TempDir(), t.TempDir()
	specs := []agent.TargetSpec{
		{Name: "one", Kind: agent.KindFile, Item: "a", Dest: join(out, "a"), Mode: 0o640, UID: -1, GID: -1},
		dirSpec(join(out, "d")),
	}
	mustPublish(t, p, map[string]string{"a": "persisted", "b": "bee"})
	r := startDaemon(t, c.Addrs(), state, specs)
	r.waitGeneration(t, 1)
	r.stop()
	c.Stop(0)

	// Outputs lost (a reinstalled host), ZooKeeper unreachable.
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	r2 := startDaemon(t, c.Addrs(), state, specs)
	st := r2.waitGeneration(t, 1)
	if st.State == "live" {
		t.Fatalf("state %q with ZooKeeper down", st.State)
	}
	if got := readFile(t, join(out, "a")); got != "persisted" {
		t.Fatalf("persisted render = %q", got)
	}

	// Drift: delete and edit rendered files by hand; both are restored.
	if err := os.Remove(join(out, "a")); err != nil {
		t.Fatal(err)
	}
	r2.waitFor(t, "restored the deleted file", func(agent.Status) bool {
		b, err := os.ReadFile(join(out, "a"))
		return err == nil && string(b) == "persisted"
	})
	if err := os.WriteFile(join(out, "d/b"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	st = r2.waitFor(t, "restored the edited file", func(agent.Status) bool {
		files, err := render.ReadCurrent(join(out, "d"))
		return err == nil && string(files["b"]) == "bee"
	})
	var repairs int64
	for _, tr := range st.Targets {
		repairs += tr.Repairs
	}
	if repairs < 2 {
		t.Fatalf("drift repairs counted: %d", repairs)
	}
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func status(t testing.TB, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
