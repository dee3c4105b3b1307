package dashboardtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/tools/internal/confagentbin"
	"github.com/zkconf/zkconf/zkclient"
)

const root = "/config"

// screenshotsEnv names the directory the test writes the pages'
// screenshots to (make screenshots: docs/dashboard); without it they go
// to a temporary directory, so that make test leaves the tree clean.
const screenshotsEnv = "ZKCONF_SCREENSHOTS"

// chromium finds the browser: $ZKCONF_CHROMIUM, else chromium on PATH.
// A missing browser fails the test: scripts/ensure-chromium.sh installs it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ZKCONF_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found (chromium on PATH or $ZKCONF_CHROMIUM): run scripts/ensure-chromium.sh " +
		"(make test does), which installs the Debian chromium package")
	return ""
}

// start runs bin with args until the test ends; its output goes to a log
// file named in failures.
func start(t *testing.T, dir, name, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s output:\n%s", name, b)
		}
	})
	return cmd, logPath
}

// agent runs a real confagent process following root with one file
// target (item app.conf), the labels role=web and zone=ZONE, and an
// optional check command.
func agent(t *testing.T, bin string, servers []string, id, zone, check string) {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`zookeeper:
  servers: [%s]
  session_timeout: 4s
root: %s
state_dir: %s
agent_id: %s
labels:
  role: web
  zone: %s
http:
  listen: ""
targets:
  - name: app
    type: file
    item: app.conf
    dest: %s
    check: %q
`, strings.Join(servers, ", "), root, filepath.Join(dir, "state"), id, zone, filepath.Join(dir, "app.conf"), check)
	path := filepath.Join(dir, "confagent.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, dir, id, bin, "--config", path)
}

// serve runs confpush serve on a free port (with extra flags) and returns
// its URL.
func serve(t *testing.T, bin string, servers []string, extra ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--zk", strings.Join(servers, ","), "serve", "--listen", "127.0.0.1:0"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("confpush serve output:\n%s", out.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`dashboard on (https?://\S+?)/?$`)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		return a
	case <-done:
		t.Fatalf("confpush serve exited before listening:\n%s", out.String())
	case <-time.After(60 * time.Second):
		t.Fatal("confpush serve did not say where it listens within 60s")
	}
	return ""
}

type publisher struct {
	t *testing.T
	p *publish.Publisher
}

func (p publisher) publish(appConf, settings, msg string) int64 {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.p.Publish(ctx, publish.Request{Message: msg, Items: map[string][]byte{
		"app.conf": []byte(appConf), "settings.json": []byte(settings)}})
	if err != nil {
		p.t.Fatal(err)
	}
	return res.Generation
}

// fleetJS reads the fleet table as "id:generation:state:error|...".
const fleetJS = `[...document.querySelectorAll('#fleet tbody tr')].map(r => r.dataset.agent + ':' +
  r.querySelector('.gen').textContent + ':' + r.querySelector('.state').textContent.split(' ')[0] + ':' +
  r.querySelector('.lasterror').textContent).join('|')`

// waitJS evaluates expr (a string) in the page until ok accepts it.
func waitJS(t *testing.T, ctx context.Context, what, expr string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err == nil && ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60s; the page shows %q (%v)", what, got, err)
		}
		if err := chromedp.Do(ctx, chromedp.Sleep(200*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
}

// pageProblems collects what the browser reports against the pages:
// Content-Security-Policy violations (an inline script, handler or style
// the policy blocked: the page would be broken) and uncaught JavaScript
// exceptions.
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

// listen starts collecting the problems of the browser tab of ctx (and
// starts the browser).
func (p *pageProblems) listen(ctx context.Context) error {
	return chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *log.EventEntryAdded:
			if strings.Contains(ev.Entry.Text, "Content Security Policy") {
				msg = fmt.Sprintf("CSP violation (%s): %s", ev.Entry.URL, ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			msg = "uncaught exception: " + ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
			msg += fmt.Sprintf(" (%s:%d)", ev.ExceptionDetails.URL, ev.ExceptionDetails.LineNumber)
		}
		if msg != "" {
			p.mu.Lock()
			p.list = append(p.list, msg)
			p.mu.Unlock()
		}
	})
}

// take returns the problems collected so far and forgets them.
func (p *pageProblems) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.list
	p.list = nil
	return l
}

// none fails the test on any problem collected so far (where: the pages
// visited since the last call).
func (p *pageProblems) none(t *testing.T, where string) {
	t.Helper()
	for _, m := range p.take() {
		t.Errorf("%s: %s", where, m)
	}
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardInBrowser: two real confagents, confpush serve and a real
// headless Chromium. A publish turns the fleet table over live (the page
// is never reloaded), an agent whose check refuses a generation shows its
// error, and the generation page's diff shows the changed lines, unified
// and side by side. A canary rollout on zone=a shows in the root page's
// rollout section, its selected agent turns to applied live, and its
// promote ends it there. Each page is saved as a screenshot.
func TestDashboardInBrowser(t *testing.T) {
	browser := chromium(t)
	shots := os.Getenv(screenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, name := range []string{"confagent", "confpush"} {
		if err := confagentbin.BuildCommand(ctx, name, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := zktest.Start(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	p, err := publish.New(zkclient.Fixed(conn, sess), root, publish.WithPublisherName("alice@ops"))
	if err != nil {
		t.Fatal(err)
	}
	pub := publisher{t, p}
	pub.publish("listen = 8080\nworkers = 4\nlog = info\n", "{\n  \"cache\": true,\n  \"ttl\": 30\n}\n", "first config")
	agent(t, filepath.Join(bin, "confagent"), c.Addrs(), "web-1", "a", "")
	agent(t, filepath.Join(bin, "confagent"), c.Addrs(), "web-2", "b", "! grep -q broken {{.src}}")
	url := serve(t, filepath.Join(bin, "confpush"), c.Addrs(), "--show-content")

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	var problems pageProblems
	if err := problems.listen(bctx); err != nil {
		t.Fatal(err)
	}

	if err := chromedp.Do(bctx, chromedp.Navigate(url+"/root?root="+root)); err != nil {
		t.Fatalf("open the root page: %v", err)
	}
	cspHonoured(t, bctx, &problems)
	waitJS(t, bctx, "both agents at generation 1", fleetJS, func(s string) bool {
		return s == "web-1:1:ok:|web-2:1:ok:"
	})
	// A reload would lose this mark.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	g := pub.publish("listen = 8080\nworkers = 8\nlog = info\n", "{\n  \"cache\": true,\n  \"ttl\": 60\n}\n", "more workers")
	waitJS(t, bctx, "the table turned over to generation 2", fleetJS, func(s string) bool {
		return s == fmt.Sprintf("web-1:%d:ok:|web-2:%d:ok:", g, g)
	})
	g = pub.publish("listen = 8080\nworkers = broken\nlog = info\n", "{\n  \"cache\": true,\n  \"ttl\": 60\n}\n", "a bad value")
	rows := waitJS(t, bctx, "web-2 shows its failing check", fleetJS, func(s string) bool {
		return strings.HasPrefix(s, fmt.Sprintf("web-1:%d:ok:|web-2:%d:failing:", g, g-1)) && strings.Contains(s, "check")
	})
	t.Logf("fleet table: %s", rows)
	if kept, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !kept {
		t.Fatalf("the page was reloaded (%v)", err)
	}
	waitJS(t, bctx, "the progress bar shows both generations", `document.querySelector('#progress').innerText`,
		func(s string) bool {
			return strings.Contains(s, "generation 3: 1/2") && strings.Contains(s, "generation 2: 1/2")
		})
	screenshot(t, bctx, shots, "root.png")
	problems.none(t, "root page")

	if err := chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/generation?root=%s&g=2&against=1", url, root))); err != nil {
		t.Fatal(err)
	}
	diff := waitJS(t, bctx, "the diff of generation 1 to 2", `document.querySelector('#diff').innerText`, func(s string) bool {
		return strings.Contains(s, "app.conf changed") && strings.Contains(s, "workers = 4") && strings.Contains(s, "workers = 8") &&
			strings.Contains(s, `"ttl": 60`) && strings.Contains(s, "+1 −1 lines")
	})
	if strings.Contains(diff, "workers = broken") {
		t.Fatalf("the diff of 1 to 2 shows generation 3's content:\n%s", diff)
	}
	screenshot(t, bctx, shots, "generation.png")
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`input[value=split]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, bctx, "the side-by-side diff", `String(document.querySelectorAll('#diff table.split').length)`,
		func(s string) bool { return s == "2" })
	waitJS(t, bctx, "the side-by-side diff pairs the changed lines",
		`[...document.querySelectorAll('#diff table.split tr')].map(r => r.innerText.replace(/\s+/g, ' ').trim()).join('|')`,
		func(s string) bool { return strings.Contains(s, "2 workers = 4 2 workers = 8") })
	screenshot(t, bctx, shots, "generation-side-by-side.png")
	problems.none(t, "generation page")

	if err := chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/agent?root=%s&id=web-2", url, root))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, bctx, "web-2's failing target", `document.querySelector('#targets').innerText`,
		func(s string) bool { return strings.Contains(s, "failing") && strings.Contains(s, "check") })
	screenshot(t, bctx, shots, "agent.png")
	problems.none(t, "agent page")

	if err := chromedp.Do(bctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, bctx, "the roots page", `document.querySelector('#roots').innerText`,
		func(s string) bool { return strings.Contains(s, root) && strings.Contains(s, "a bad value") })
	screenshot(t, bctx, shots, "roots.png")
	problems.none(t, "roots page")

	if err := chromedp.Do(bctx, chromedp.Navigate(url+"/root?root=/no/such/root")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, bctx, "the 404 page", `document.body.innerText`,
		func(s string) bool {
			return strings.Contains(s, "404 not found") && strings.Contains(s, "/no/such/root")
		})

	problems.none(t, "404 page")

	rollout(t, bctx, pub, url, shots)
	problems.none(t, "root page during a rollout")

	agentNeverApplied(t, bctx, conn, url)
	problems.none(t, "agent page of an agent never seen applying")
}

// cspHonoured checks that the browser enforces the dashboard's
// Content-Security-Policy on the page open in bctx: a script element
// without src added to the page does not run, and the violation is
// reported (so that a page of the dashboard that relied on an inline
// script would show up in problems).
func cspHonoured(t *testing.T, bctx context.Context, problems *pageProblems) {
	t.Helper()
	ran, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
  const s = document.createElement("script");
  s.textContent = "window.inlineRan = true";
  document.body.appendChild(s);
  return window.inlineRan === true;
})()`))
	if err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("an inline script ran: the Content-Security-Policy is not in force")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := problems.take()
		if len(got) == 1 && strings.HasPrefix(got[0], "CSP violation") {
			return
		}
		if len(got) > 0 || time.Now().After(deadline) {
			t.Fatalf("the blocked inline script was reported as %q, want one CSP violation", got)
		}
		if err := chromedp.Do(bctx, chromedp.Sleep(100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
}

// agentNeverApplied opens the agent page of an agent that registered but
// never reported (its "applied" list is empty, which a server before this
// test served as null): the page renders it as gone, and re-reading it
// every 5 s shows no error.
func agentNeverApplied(t *testing.T, bctx context.Context, conn *zk.Conn, url string) {
	t.Helper()
	now := time.Now().UTC()
	b, err := json.Marshal(fleet.Registration{FirstSeen: now, LastSeen: now, Hostname: "ghost.example"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(layout.New(root, layout.DefaultMeta).AgentNode("ghost"), b, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	page := fmt.Sprintf("%s/agent?root=%s&id=ghost", url, root)
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The dashboard sees the registration through its watches.
		if err := chromedp.Do(bctx, chromedp.Navigate(page)); err != nil {
			t.Fatal(err)
		}
		h, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('h1').textContent`))
		if err == nil && h == "ghost" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent page of ghost did not open within 60s: %q %v", h, err)
		}
		if err := chromedp.Do(bctx, chromedp.Sleep(200*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	// Two reads (data-loads counts them), or an error shown.
	waitJS(t, bctx, "two reads of the agent page, or an error", `String(Number(document.body.dataset.loads || 0) >= 2 ||
  document.querySelectorAll('main > p.error').length > 0)`, func(s string) bool { return s == "true" })
	errs, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[...document.querySelectorAll('main > p.error')].map(e => e.textContent).join(' | ')`))
	if err != nil || errs != "" {
		t.Fatalf("the agent page of an agent never seen applying shows errors: %q (%v)", errs, err)
	}
	summary, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('#summary').innerText`))
	if err != nil || !strings.Contains(summary, "gone") || !strings.Contains(summary, "ghost.example") {
		t.Fatalf("the agent page of ghost: %q (%v)", summary, err)
	}
}

// rolloutJS reads the fleet table's rollout column as
// "id:generation:rollout state|...".
const rolloutJS = `[...document.querySelectorAll('#fleet tbody tr')].map(r => r.dataset.agent + ':' +
  r.querySelector('.gen').textContent + ':' + r.querySelector('.rollout-state').textContent.split(' ')[0]).join('|')`

// rollout runs a canary on zone=a (web-1) with the root page open: the
// rollout section names the candidate, web-1 turns to applied and web-2
// stays on stable, live; the promote ends the rollout on the page.
func rollout(t *testing.T, bctx context.Context, pub publisher, url, shots string) {
	t.Helper()
	g := pub.publish("listen = 8080\nworkers = 8\nlog = info\n", "{\n  \"cache\": true,\n  \"ttl\": 60\n}\n", "fix the bad value")
	if err := chromedp.Do(bctx, chromedp.Navigate(url+"/root?root="+root)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, bctx, "both agents on the fixed generation", fleetJS, func(s string) bool {
		return s == fmt.Sprintf("web-1:%d:ok:|web-2:%d:ok:", g, g)
	})
	if hidden, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector('#rollout').hidden`)); err != nil || !hidden {
		t.Fatalf("a rollout section without a rollout (%v)", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := pub.p.Publish(ctx, publish.Request{Message: "try info logging off", Canary: &manifest.Selection{Selector: "zone=a"},
		Items: map[string][]byte{"app.conf": []byte("listen = 8080\nworkers = 8\nlog = warn\n"),
			"settings.json": []byte("{\n  \"cache\": true,\n  \"ttl\": 60\n}\n")}})
	if err != nil {
		t.Fatal(err)
	}
	cand := res.Generation
	waitJS(t, bctx, "the rollout section names the candidate", `(document.querySelector('#rollout-candidate') || {}).textContent + ' ' + (document.querySelector('#rollout-selection') || {}).textContent`,
		func(s string) bool { return s == fmt.Sprintf(`%d "zone=a"`, cand) })
	waitJS(t, bctx, "web-1 applied the candidate, web-2 on stable", rolloutJS, func(s string) bool {
		return s == fmt.Sprintf("web-1:%d:applied|web-2:%d:stable", cand, g)
	})
	waitJS(t, bctx, "the step's progress", `document.querySelector('#rollout-steps').innerText + ' ' + document.querySelector('#rollout-outside').innerText`,
		func(s string) bool { return strings.Contains(s, "1/1 applied") && strings.Contains(s, "1/1 on stable") })
	waitJS(t, bctx, "the history marks the candidate", `document.querySelector('#history').innerText`,
		func(s string) bool { return strings.Contains(s, `candidate for "zone=a"`) })
	if kept, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !kept {
		t.Fatalf("the page was reloaded (%v)", err)
	}
	screenshot(t, bctx, shots, "rollout.png")

	rs, err := pub.p.Rollout(ctx)
	if err != nil || rs.Canary == nil {
		t.Fatalf("rollout: %+v %v", rs, err)
	}
	pres, err := pub.p.Promote(ctx, rs.Canary.RolloutID, publish.Request{Message: "warn is enough"})
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, bctx, "the rollout shows promoted", `(document.querySelector('#rollout-end') || {}).textContent + ' ' + document.querySelector('#rollout').innerText`,
		func(s string) bool {
			return strings.HasPrefix(s, "promoted ") && strings.Contains(s, fmt.Sprintf("ended as generation %d", pres.Generation))
		})
	waitJS(t, bctx, "both agents on the promoted generation", fleetJS, func(s string) bool {
		return s == fmt.Sprintf("web-1:%d:ok:|web-2:%d:ok:", pres.Generation, pres.Generation)
	})
	if kept, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !kept {
		t.Fatalf("the page was reloaded (%v)", err)
	}
}

// TestServeTLS: with --tls-cert and --tls-key the dashboard serves HTTPS
// (verified against the issuing CA) and nothing over plain HTTP.
func TestServeTLS(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "confpush")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := confagentbin.BuildCommand(ctx, "confpush", bin); err != nil {
		t.Fatal(err)
	}
	ca, err := zktest.NewCA(t.TempDir(), "dashboard-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, _, err := ca.Issue("dashboard", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c := zktest.Start(t)
	url := serve(t, bin, c.Addrs(), "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("serve announced %s", url)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	resp, err := client.Get(url + "/api/roots")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"roots"`) {
		t.Fatalf("GET /api/roots over HTTPS = %d %s", resp.StatusCode, body)
	}
	plain := strings.Replace(url, "https://", "http://", 1)
	if resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(plain + "/api/roots"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP answered %d", resp.StatusCode)
		}
	}
}
