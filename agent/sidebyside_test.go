package agent_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/confd"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// confdWalk reads the tree under prefix as confd's ZooKeeper backend
// does (confd.ZooKeeperValues: key by key, unversioned).
func confdWalk(conn *zk.Conn, prefix string) (map[string]string, error) {
	return confd.ZooKeeperValues(conn, prefix)
}

// sideSet is generation g of the nested tree both kinds of host follow:
// every value names its generation, and upstream/app3 (a directory of
// its own) is there in odd generations only.
func sideSet(g int) map[string]string {
	s := map[string]string{
		"gen":                fmt.Sprint(g),
		"database/host":      fmt.Sprintf("db-%d", g),
		"database/port":      "5432",
		"upstream/app1/addr": fmt.Sprintf("10.0.%d.1:80", g),
		"upstream/app2/addr": fmt.Sprintf("10.0.%d.2:80", g),
		"motd":               fmt.Sprintf("Grüße aus Generation %d\nzweite Zeile\n", g),
	}
	if g%2 == 1 {
		s["upstream/app3/addr"] = fmt.Sprintf("10.0.%d.3:80", g)
	}
	return s
}

// sideTemplate is a confd template over the nested keys.
const sideTemplate = `gen={{getv "/gen"}}
db={{getv "/database/host"}}:{{getv "/database/port"}}
{{range lsdir "/upstream"}}{{.}} {{end}}
{{range gets "/upstream/*/addr"}}{{.Key}}={{.Value}}
{{end}}{{getv "/motd"}}`

// sideRendered is what confd renders from sideSet(g) with sideTemplate,
// written out.
func sideRendered(g int) string {
	apps := []string{"app1", "app2"}
	if g%2 == 1 {
		apps = append(apps, "app3")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gen=%d\ndb=db-%d:5432\n", g, g)
	for _, a := range apps {
		b.WriteString(a + " ")
	}
	b.WriteString("\n")
	for i, a := range apps {
		fmt.Fprintf(&b, "/upstream/%s/addr=10.0.%d.%d:80\n", a, g, i+1)
	}
	fmt.Fprintf(&b, "Grüße aus Generation %d\nzweite Zeile\n", g)
	return b.String()
}

// TestConfdSideBySide is a fleet half migrated: a host that reads the
// root as confd's ZooKeeper backend does (raw go-zookeeper, key by key)
// and confagent, rendering a confd template, follow one root through ten
// publishes of a nested tree, five in multi mode, then mostly in marker
// mode. After each publish the confd reader sees exactly the published
// keys and values, and while publishes run it never misses a key every
// generation has nor reads a value no generation had (it may mix
// generations: confd tears). In multi mode it sees nothing else; while a
// marker-mode publish runs it may also see the marker (/invalid) and a
// directory as an empty key (between its creation and its first item, or
// its last item's deletion and its own), nothing else. confagent
// renders every generation it applies whole, never torn, byte for byte
// as confd renders the same keys.
func TestConfdSideBySide(t *testing.T) {
	c := sharedZooKeeper.For(t)
	p := publisher(t, c)
	out := join(t.TempDir(), "app.conf")
	spec := confdSpec("app.conf", out, sideTemplate, root, root, "/")
	r := startDaemon(t, c.Addrs(), t.TempDir(), []agent.TargetSpec{spec})

	const gens = 10
	valid := map[string]map[string]bool{} // key → every value some generation gave it
	always := map[string]bool{}           // keys every generation has
	rendered := map[string]bool{}
	for g := 1; g <= gens; g++ {
		for k, v := range sideSet(g) {
			if valid[root+"/"+k] == nil {
				valid[root+"/"+k] = map[string]bool{}
			}
			valid[root+"/"+k][v] = true
		}
		rendered[sideRendered(g)] = true
	}
	for k := range sideSet(2) { // the even sets are the odd ones minus app3
		always[root+"/"+k] = true
	}

	// The confd host and an observer of confagent's file, while the
	// publishes run.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	extra := map[string]bool{}
	dirs := map[string]bool{} // directories of some generation
	for g := 1; g <= gens; g++ {
		for k := range sideSet(g) {
			for d := path.Dir(k); d != "."; d = path.Dir(d) {
				dirs[root+"/"+d] = true
			}
		}
	}
	var markerPhase atomic.Bool // set before the first marker-mode publish
	walks, failed, torn := 0, 0, 0
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	readerConn := c.Connect(t, 10*time.Second)
	wg.Go(func() {
		for ctx.Err() == nil {
			marker := markerPhase.Load()
			vars, err := confdWalk(readerConn, root)
			marker = marker || markerPhase.Load()
			if err != nil {
				if !errors.Is(err, zk.ErrNoNode) {
					report("confd walk: %v", err)
				}
				mu.Lock()
				failed++
				mu.Unlock()
				continue
			}
			gensSeen := map[string]bool{}
			for k, v := range vars {
				switch {
				case k == root+"/invalid" || dirs[k] && v == "":
					if !marker {
						report("confd reads %s as a key while only multi-mode publishes run", k)
					}
					mu.Lock()
					extra[k] = true
					mu.Unlock()
				case valid[k] == nil:
					report("confd reads key %s, which no generation has", k)
				case !valid[k][v]:
					report("confd reads %s = %q, a value no generation gave it", k, v)
				}
				if k == root+"/gen" {
					gensSeen[v] = true
				}
			}
			for k := range always {
				if _, ok := vars[k]; !ok {
					report("confd misses key %s, which every generation has", k)
				}
			}
			if g := vars[root+"/gen"]; vars[root+"/database/host"] != "db-"+g {
				mu.Lock()
				torn++
				mu.Unlock()
			}
			mu.Lock()
			walks++
			mu.Unlock()
		}
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			b, err := os.ReadFile(out)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				report("read %s: %v", out, err)
				return
			}
			if !rendered[string(b)] {
				report("confagent's file is no generation's rendering (torn):\n%s", b)
			}
		}
	})

	for g := 1; g <= gens; g++ {
		mode := manifest.ModeMulti
		if g > 5 && g != 8 {
			mode = manifest.ModeMarker
			markerPhase.Store(true)
		}
		items := map[string][]byte{}
		for k, v := range sideSet(g) {
			items[k] = []byte(v)
		}
		pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := p.Publish(pctx, publish.Request{Items: items, Mode: mode})
		pcancel()
		if err != nil {
			t.Fatalf("publish %d: %v", g, err)
		}
		if res.Generation != int64(g) {
			t.Fatalf("published generation %d, want %d", res.Generation, g)
		}
		// Settled: the confd reader sees exactly this generation's keys.
		vars, err := confdWalk(c.Connect(t, 10*time.Second), root)
		if err != nil {
			t.Fatalf("generation %d: confd walk after the publish: %v", g, err)
		}
		want := map[string]string{}
		for k, v := range sideSet(g) {
			want[root+"/"+k] = v
		}
		if !maps.Equal(vars, want) {
			t.Fatalf("generation %d (%s mode): after the publish confd reads\n%v\nwant\n%v", g, res.Mode, vars, want)
		}
		r.waitGeneration(t, int64(g))
		if got := readFile(t, out); got != sideRendered(g) {
			t.Fatalf("generation %d: confagent rendered\n%s\nwant (as confd)\n%s", g, got, sideRendered(g))
		}
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	t.Logf("confd reader: %d walks (%d torn, %d failed on a node deleted under it), zkconf nodes seen as keys: %v",
		walks, torn, failed, slices.Sorted(maps.Keys(extra)))
}
