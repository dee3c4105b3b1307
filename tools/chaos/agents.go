package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkconf/zkconf/internal/faultproxy"
)

// PoisonToken is the token the picky agent's check rejects.
const PoisonToken = "CHAOS-POISON"

// chaosRoot is the config root the run publishes to.
const chaosRoot = "/chaos"

// summaryTemplate is every agent's template target. The checker parses its
// output itself (parseTemplateOutput): a header with the generation and the
// request nonce read through the json helper, one line per item (text items
// in full as JSON strings, binary ones by size), and a trailer counting the
// items, so that a truncated file cannot parse.
const summaryTemplate = `zkconf-chaos summary
generation {{ generation }}
nonce {{ (json "app.json").request }}
{{ range names }}{{ $p := split ".bin" . }}{{ if eq (len $p) 1 }}item {{ toJSON . }} {{ toJSON (item .) }}{{ else }}bin {{ toJSON . }} {{ len (item .) }}{{ end }}
{{ end }}end {{ len names }}
`

// agentProc is one confagent process and everything around it: its
// configuration, its proxies (one per ZooKeeper server), its outputs.
type agentProc struct {
	idx int
	id  string
	// relabelled swaps the agent's zone label (closingCanary); set
	// while it is stopped.
	relabelled bool
	dir        string
	cfgPath    string
	tmpl       string
	dirOut     string // dir target
	tmplOut    string // template target
	// twoRoots: the agent follows commonRoot beside chaosRoot (roots:
	// main and common), with a dir target of common and a template
	// target over both (roots.go).
	twoRoots  bool
	commonOut string // dir target of common
	cutTmpl   string
	cutOut    string // template target over both roots
	state     string
	authFile  string // its identity's credentials (agent-N:password)
	picky     bool   // its dir target's check rejects PoisonToken
	proxies   []*faultproxy.Proxy
	bin       string
	sess      time.Duration
	jitter    time.Duration
	resync    time.Duration
	log       *eventLog
	onExit    func(a *agentProc, code int, tail string) // unexpected exits

	// extraConfig is appended to the valid configuration (see
	// incarnationConfig).
	extraConfig string

	logf *os.File

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	expected bool // the current process is being stopped on purpose
	started  time.Time
	lines    *lineSink

	starts    atomic.Int64
	rejected  atomic.Int64 // "configuration rejected" log lines
	reloaded  atomic.Int64 // "configuration reloaded" log lines
	startLine atomic.Int64 // "confagent starting" log lines
}

func newAgent(idx int, base string, proxies []*faultproxy.Proxy, cfg *Config, log *eventLog, creds string) (*agentProc, error) {
	a := &agentProc{
		idx: idx, id: fmt.Sprintf("agent-%d", idx), dir: filepath.Join(base, fmt.Sprintf("agent-%d", idx)),
		picky: idx == 0, proxies: proxies, bin: cfg.Confagent, sess: cfg.SessionTimeout,
		jitter: cfg.ResyncJitter, resync: cfg.ResyncInterval, log: log,
	}
	a.cfgPath = filepath.Join(a.dir, "etc", "confagent.yaml")
	a.tmpl = filepath.Join(a.dir, "etc", "summary.tmpl")
	a.dirOut = filepath.Join(a.dir, "out", "files")
	a.tmplOut = filepath.Join(a.dir, "out", "summary.txt")
	a.state = filepath.Join(a.dir, "state")
	a.twoRoots = twoRootsAgent(idx)
	a.commonOut = filepath.Join(a.dir, "out", "common")
	a.cutTmpl = filepath.Join(a.dir, "etc", "cut.tmpl")
	a.cutOut = filepath.Join(a.dir, "out", "cut.txt")
	a.authFile = filepath.Join(a.dir, "etc", "zk-auth")
	if err := os.MkdirAll(filepath.Dir(a.cfgPath), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(a.authFile, []byte(creds+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(a.tmpl, []byte(summaryTemplate), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(a.cutTmpl, []byte(cutTemplate), 0o644); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(a.dir, "confagent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	a.logf = f
	if err := a.writeConfig(a.validConfig(), true); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *agentProc) servers() []string {
	s := make([]string, len(a.proxies))
	for i, p := range a.proxies {
		s[i] = p.Addr()
	}
	return s
}

// validConfig is the agent's configuration. Every string is written as a
// JSON string, which YAML reads as a double-quoted scalar.
func (a *agentProc) validConfig() string {
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "zookeeper:\n  servers: [%s]\n  session_timeout: %s\n  auth_file: %s\n", strings.Join(quoteAll(a.servers()), ", "), a.sess, q(a.authFile))
	rootOf := ""
	if a.twoRoots {
		fmt.Fprintf(&b, "roots:\n  main: %s\n  common: %s\n", q(chaosRoot), q(commonRoot))
		rootOf = "    root: main\n"
	} else {
		fmt.Fprintf(&b, "root: %s\n", q(chaosRoot))
	}
	fmt.Fprintf(&b, "meta: \"/zkconf\"\nstate_dir: %s\nagent_id: %s\n", q(a.state), q(a.id))
	fmt.Fprintf(&b, "labels:\n  %s: %s\n", zoneLabel, q(a.labels()[zoneLabel]))
	fmt.Fprintf(&b, "http:\n  listen: \"\"\nlog:\n  level: info\n  format: text\napply: all\nstale_after: 60s\n")
	fmt.Fprintf(&b, "resync_interval: %s\nresync_jitter: %s\n", a.resync, a.jitter)
	fmt.Fprintf(&b, "targets:\n  - name: files\n    type: dir\n    dest: %s\n    mode: \"0644\"\n", q(a.dirOut))
	b.WriteString(rootOf)
	if a.picky {
		fmt.Fprintf(&b, "    check: %s\n", q("if grep -rqF "+PoisonToken+" {{.src}}; then echo rejected >&2; exit 1; fi"))
		fmt.Fprintf(&b, "    timeout: 20s\n")
	}
	fmt.Fprintf(&b, "  - name: summary\n    type: template\n    src: %s\n    dest: %s\n    mode: \"0644\"\n", q(a.tmpl), q(a.tmplOut))
	fmt.Fprintf(&b, "    reload: %s\n", q(a.reloadCommand()))
	b.WriteString(rootOf)
	if a.twoRoots {
		fmt.Fprintf(&b, "  - name: common-files\n    type: dir\n    root: common\n    dest: %s\n    mode: \"0644\"\n", q(a.commonOut))
		fmt.Fprintf(&b, "  - name: cut\n    type: template\n    root: common\n    roots: [main]\n    src: %s\n    dest: %s\n    mode: \"0644\"\n", q(a.cutTmpl), q(a.cutOut))
	}
	b.WriteString(a.extraConfig)
	return b.String()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// invalidConfigs are the broken edits the nemesis makes; each must be
// rejected while the running configuration stays.
var invalidConfigs = []struct {
	name string
	edit func(valid string) string
}{
	{"relative target dest", func(v string) string {
		return v + "  - name: broken\n    type: file\n    item: app.json\n    dest: relative/path\n"
	}},
	{"YAML syntax error", func(v string) string { return v + "targets: [\n  {name: x\n" }},
	{"unknown key", func(v string) string { return strings.Replace(v, "targets:", "taregts:", 1) }},
	{"bare-number duration", func(v string) string {
		return strings.Replace(v, "stale_after: 60s", "stale_after: 60", 1)
	}},
	{"missing template", func(v string) string {
		return strings.Replace(v, "summary.tmpl", "no-such.tmpl", 1)
	}},
	{"empty file", func(string) string { return "" }},
	{"truncated file", func(v string) string {
		// Cut right after the opening quote of a value past the middle:
		// a partial file that no path length can make valid YAML.
		mid := len(v) / 2
		if i := strings.Index(v[mid:], `: "`); i >= 0 {
			return v[:mid+i+3]
		}
		return v[:mid]
	}},
	{"unknown apply mode", func(v string) string { return strings.Replace(v, "apply: all", "apply: sometimes", 1) }},
}

// writeConfig replaces the configuration file: atomically (temporary file
// and rename, as configuration management does) or in place (truncate and
// write, as an editor may, so that the agent can see a partial file).
func (a *agentProc) writeConfig(content string, atomicWrite bool) error {
	if !atomicWrite {
		return os.WriteFile(a.cfgPath, []byte(content), 0o644)
	}
	tmp := a.cfgPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, a.cfgPath)
}

// start starts the process. Pdeathsig kills it if the run dies; its own
// process group lets stop reach its check commands too.
func (a *agentProc) start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil {
		return nil
	}
	cmd := exec.Command(a.bin, "--config", a.cfgPath)
	cmd.Dir = a.dir
	cmd.Env = append(cleanEnv(), "TMPDIR="+a.dir)
	sink := &lineSink{a: a}
	cmd.Stdout, cmd.Stderr = sink, sink
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", a.id, err)
	}
	n := a.starts.Add(1)
	fmt.Fprintf(a.logf, "=== chaos: start #%d, pid %d, %s\n", n, cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	done := make(chan struct{})
	a.cmd, a.done, a.expected, a.started, a.lines = cmd, done, false, time.Now(), sink
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		a.mu.Lock()
		expected := a.expected
		if a.cmd == cmd {
			a.cmd = nil
		}
		a.mu.Unlock()
		fmt.Fprintf(a.logf, "=== chaos: pid %d exited (%v), expected=%v\n", cmd.Process.Pid, err, expected)
		close(done)
		if !expected && a.onExit != nil {
			a.onExit(a, code, sink.tail())
		}
	}()
	return nil
}

// cleanEnv is the environment without CONFAGENT_* overrides.
func cleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CONFAGENT_") {
			env = append(env, e)
		}
	}
	return env
}

// stop sends sig to the process group and waits for the exit (SIGKILL
// after grace). It returns whether the process exited within grace.
func (a *agentProc) stop(sig syscall.Signal, grace time.Duration) bool {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	if cmd == nil {
		a.mu.Unlock()
		return true
	}
	a.expected = true
	a.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return true
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return false
	}
}

func (a *agentProc) running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cmd != nil
}

// signal sends sig to the process itself.
func (a *agentProc) signal(sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil {
		_ = a.cmd.Process.Signal(sig)
	}
}

// waitStarted waits until the running process has logged its start (its
// signal handlers are then being installed) and a little more.
func (a *agentProc) waitStarted(timeout time.Duration) bool {
	a.mu.Lock()
	sink := a.lines
	a.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if sink != nil && sink.sawStart.Load() {
			time.Sleep(500 * time.Millisecond)
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func (a *agentProc) tail() string {
	a.mu.Lock()
	sink := a.lines
	a.mu.Unlock()
	if sink == nil {
		return ""
	}
	return sink.tail()
}

func (a *agentProc) faultAll(f func(p *faultproxy.Proxy)) {
	for _, p := range a.proxies {
		f(p)
	}
}

// lineSink receives a process's output: it goes to the agent's log file,
// the last lines are kept for reports, and a few messages are counted.
type lineSink struct {
	a        *agentProc
	mu       sync.Mutex
	partial  []byte
	last     []string
	sawStart atomic.Bool
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.a.logf.Write(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		line := string(s.partial[:i])
		s.partial = s.partial[i+1:]
		switch {
		case strings.Contains(line, "configuration rejected"):
			s.a.rejected.Add(1)
		case strings.Contains(line, "configuration reloaded"):
			s.a.reloaded.Add(1)
		case strings.Contains(line, "confagent starting"):
			s.a.startLine.Add(1)
			s.sawStart.Store(true)
		}
		s.last = append(s.last, line)
		if len(s.last) > 40 {
			s.last = s.last[len(s.last)-40:]
		}
	}
	if len(s.partial) > 1<<20 {
		s.partial = s.partial[:0]
	}
	return len(p), nil
}

func (s *lineSink) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.last, "\n")
}
