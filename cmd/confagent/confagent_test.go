package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// binary is the confagent binary built once for the subprocess tests.
var binary string

// confpushBinary builds the confpush binary once per test binary, on
// first use, beside confagent's (TestMain removes both): a link is seconds
// of CPU, and three tests run it.
var confpushBinary = sync.OnceValues(func() (string, error) {
	confpush := filepath.Join(filepath.Dir(binary), "confpush")
	if out, err := exec.Command("go", "build", "-o", confpush, "../confpush").CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return confpush, nil
})

// sharedZooKeeper is the server of the tests that need only "a
// ZooKeeper" (newEnv): each gets it emptied through For. The tests that
// stop, kill or wipe a server start their own (newEnvOwnServer), and
// those that set no environment variable (t.Setenv) call t.Parallel: they
// share nothing with each other and mostly wait (for a server to come
// back, a session to be replaced), and Go runs parallel tests only after
// all the serial ones, so they never overlap the tests on this server.
var sharedZooKeeper zktest.Shared

// reexecGuard is set in the environment of the test binary: an in-process
// run that executed the program again (the daemon's timer slack, main's
// only) would start this binary over, with it set.
const reexecGuard = "CONFAGENT_TEST_BINARY_STARTED"

func TestMain(m *testing.M) {
	if os.Getenv(reexecGuard) != "" {
		fmt.Fprintln(os.Stderr, "the test binary was executed again: an in-process run re-executed the program")
		os.Exit(1)
	}
	if err := os.Setenv(reexecGuard, "1"); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "confagent-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "confagent")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build confagent: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	sharedZooKeeper.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

const testRoot = "/config"

type env struct {
	c       *zktest.Cluster
	pub     *publish.Publisher
	dir     string // config, outputs and state below it
	out     string
	cfgPath string
}

// newEnv is an env on the package's shared server (emptied for the test).
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, sharedZooKeeper.For(t))
}

// newEnvOwnServer is an env on a server of the test's own, for the tests
// that stop, kill or wipe it.
func newEnvOwnServer(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, zktest.Start(t))
}

func newEnvOn(t *testing.T, c *zktest.Cluster) *env {
	t.Helper()
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p, err := publish.New(zkclient.Fixed(conn, sess), testRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &env{c: c, pub: p, dir: dir, out: filepath.Join(dir, "out"), cfgPath: filepath.Join(dir, "confagent.yaml")}
	if err := os.WriteFile(filepath.Join(dir, "all.tmpl"), []byte(`{{ range names }}{{ item . }};{{ end }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.writeConfig(t, "")
	return e
}

// writeConfig writes a valid agent configuration, plus extra YAML.
func (e *env) writeConfig(t *testing.T, extraTarget string) {
	t.Helper()
	cfg := e.agentConfig("text", "debug", "", fmt.Sprintf(`  - name: d
    type: dir
    dest: %s
  - name: all
    type: template
    src: %s
    dest: %s
%s`, filepath.Join(e.out, "d"), filepath.Join(e.dir, "all.tmpl"), filepath.Join(e.out, "all.txt"), extraTarget))
	writeAtomic(t, e.cfgPath, cfg)
}

func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// set is generation g of a set of n items; every value names g and ends
// with a marker so a truncated file is detectable.
func set(g, n int) map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("item%02d", i)] = []byte(fmt.Sprintf("gen=%d item=%d %s END", g, i, strings.Repeat("x", 200)))
	}
	return m
}

func (e *env) publish(t testing.TB, items map[string][]byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.pub.Publish(ctx, publish.Request{Items: items})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res.Generation
}

// proc is a confagent subprocess.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	newLog chan struct{}
	done   chan struct{}
}

func (e *env) start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startBinary(t, binary, append([]string{"--config", e.cfgPath}, args...)...)
}

// startBinary starts bin with args, its stderr collected line by line
// (proc), killed at the end of the test.
func startBinary(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = zktest.ChildAttr(false)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, newLog: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			select {
			case p.newLog <- struct{}{}:
			default:
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// waitLog waits for a log line containing s.
func (p *proc) waitLog(t *testing.T, s string) {
	t.Helper()
	waitLine(t, p, strconv.Quote(s), func(l string) (struct{}, bool) { return struct{}{}, strings.Contains(l, s) })
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitApplied watches the agent's status node (a ZooKeeper watch, no
// polling) until it reports generation g applied.
func (e *env) waitApplied(t *testing.T, agentID string, g int64) agent.Status {
	t.Helper()
	return e.waitStatus(t, agentID, func(st agent.Status) bool { return st.Generation >= g })
}

// checkOutputs verifies that every output is complete and of one
// generation, and returns that generation (0 when nothing is rendered).
func (e *env) checkOutputs(t *testing.T, n int) int {
	t.Helper()
	files, err := render.ReadCurrent(filepath.Join(e.out, "d"))
	dirGen := 0
	if err == nil {
		dirGen = generationOf(t, "dir", mapValues(files), n)
	} else if !errors.Is(err, fs.ErrNotExist) {
		// Before the first swap there is no ..data: nothing rendered yet.
		t.Fatalf("dir target unreadable: %v", err)
	}
	// Every top-level link must resolve to a complete file too.
	entries, _ := os.ReadDir(filepath.Join(e.out, "d"))
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), "..") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(e.out, "d", en.Name()))
		if err != nil {
			t.Fatalf("dir entry %s: %v", en.Name(), err)
		}
		if !bytes.HasSuffix(b, []byte(" END")) {
			t.Fatalf("partial or empty file %s: %q", en.Name(), b)
		}
	}
	b, err := os.ReadFile(filepath.Join(e.out, "all.txt"))
	if err == nil {
		parts := strings.Split(strings.TrimSuffix(string(b), ";"), ";")
		tg := generationOf(t, "template", parts, n)
		if dirGen != 0 && tg != 0 && tg != dirGen {
			// Targets are swapped one after the other; a kill between the
			// two renames may leave them one generation apart, but each is
			// whole.
			t.Logf("targets at generations %d and %d after a kill", dirGen, tg)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return dirGen
}

func mapValues(m map[string][]byte) []string {
	var out []string
	for _, v := range m {
		out = append(out, string(v))
	}
	return out
}

func generationOf(t *testing.T, what string, vals []string, n int) int {
	t.Helper()
	if len(vals) != n {
		t.Fatalf("%s output has %d items, want %d", what, len(vals), n)
	}
	g := -1
	for _, v := range vals {
		if !strings.HasSuffix(v, " END") {
			t.Fatalf("%s output has a partial item %q", what, v)
		}
		x, err := strconv.Atoi(strings.Fields(strings.TrimPrefix(v, "gen="))[0])
		if err != nil {
			t.Fatalf("%s output item %q", what, v)
		}
		if g >= 0 && x != g {
			t.Fatalf("%s output mixes generations %d and %d", what, g, x)
		}
		g = x
	}
	return g
}

// TestSIGKILLDuringRendersNeverPartial kills confagent at random points
// while generations are being published and rendered, 50 times: outputs are
// never partial, empty or mixed, and the next start converges.
func TestSIGKILLDuringRendersNeverPartial(t *testing.T) {
	e := newEnv(t)
	const n, rounds = 40, 50
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	e.publish(t, set(1, n))
	stop := make(chan struct{})
	var pubErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // publishes continuously so the agent is always rendering
		defer wg.Done()
		for g := 2; ; g++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := e.pub.Publish(ctx, publish.Request{Items: set(g, n)})
			cancel()
			if err != nil {
				pubErr = err
				return
			}
		}
	}()
	for i := 0; i < rounds; i++ {
		p := e.start(t)
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond) // the random kill point itself
		p.kill()
		e.checkOutputs(t, n)
	}
	close(stop)
	wg.Wait()
	if pubErr != nil {
		t.Fatalf("publisher: %v", pubErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	m, _, err := e.pub.Current(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	gen := m.Generation
	e.start(t)
	e.waitApplied(t, "agent-under-test", gen)
	if g := e.checkOutputs(t, n); int64(g) != gen {
		t.Fatalf("converged to %d, want %d", g, gen)
	}
}

// TestConfigEditWithErrorIsRejected: a broken config edit is rejected with
// its reasons and the agent keeps running and applying.
func TestConfigEditWithErrorIsRejected(t *testing.T) {
	e := newEnv(t)
	e.publish(t, set(1, 3))
	p := e.start(t)
	e.waitApplied(t, "agent-under-test", 1)

	e.writeConfig(t, "  - name: broken\n    type: file\n    dest: relative/path\n")
	p.waitLog(t, "configuration rejected")
	if !strings.Contains(p.log(), "targets[2].dest") {
		t.Fatalf("rejection does not name the key:\n%s", p.log())
	}
	g := e.publish(t, set(2, 3))
	e.waitApplied(t, "agent-under-test", g)
	e.checkOutputs(t, 3)

	// SIGHUP with a fixed config reloads it.
	e.writeConfig(t, "")
	p.waitLog(t, "configuration reloaded")
}

// TestOnceAndDryRun runs the in-process entry point.
func TestOnceAndDryRun(t *testing.T) {
	e := newEnv(t)
	e.publish(t, set(1, 2))
	var out, errb bytes.Buffer
	if code := run([]string{"--config", e.cfgPath, "--dry-run"}, &out, &errb); code != 0 {
		t.Fatalf("--dry-run exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "+++ b"+filepath.Join(e.out, "d", "item00")) {
		t.Fatalf("--dry-run output:\n%s", out.String())
	}
	if _, err := os.Stat(e.out); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote outputs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "state")); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote state: %v", err)
	}
	out.Reset()
	if code := run([]string{"--config", e.cfgPath, "--once"}, &out, &errb); code != 0 {
		t.Fatalf("--once exit %d: %s", code, errb.String())
	}
	if g := e.checkOutputs(t, 2); g != 1 {
		t.Fatalf("--once rendered generation %d", g)
	}
	out.Reset()
	if code := run([]string{"--config", e.cfgPath, "--dry-run"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "nothing would change") {
		t.Fatalf("--dry-run after --once: %d %s", code, out.String())
	}
}

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("root: relative\ntargets:\n  - name: x\n    type: nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"check-config", "--config", bad}, &out, &errb)
	if code != exitConfig {
		t.Fatalf("exit %d, want %d", code, exitConfig)
	}
	for _, want := range []string{"zookeeper.servers", "root", "targets[0].type", "targets[0].dest"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("check-config does not report %s:\n%s", want, errb.String())
		}
	}
	if code := run([]string{"--bogus"}, io.Discard, io.Discard); code != exitUsage {
		t.Fatalf("bad flag exit %d", code)
	}
}
