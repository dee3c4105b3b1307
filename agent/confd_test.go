package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/template"
)

// confdSpec is a confd template target writing dest, reading root.
func confdSpec(name, dest, text, root, prefix string, keys ...string) agent.TargetSpec {
	return agent.TargetSpec{Name: name, Kind: agent.KindTemplate, Dest: dest, Template: text,
		TemplatePath: "/etc/confd/templates/" + name + ".tmpl", Mode: 0o644, UID: -1, GID: -1,
		Syntax: agent.SyntaxConfd, Confd: agent.ConfdResource{Root: root, Prefix: prefix, Keys: keys}}
}

// planOne renders spec from snap in memory (Plan) and returns its output.
func planOne(t *testing.T, spec agent.TargetSpec, snap agent.Snapshot) (string, error) {
	t.Helper()
	r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := r.Plan(snap)
	if err != nil {
		return "", err
	}
	if len(changes) != 1 {
		t.Fatalf("Plan: %d changes, want 1", len(changes))
	}
	return string(changes[0].New), nil
}

// TestConfdTargetRendersTestdata renders every case of internal/confd's
// testdata (written from confd's source) through a confd target from a
// hand-built snapshot whose item names are the tree's paths below a root:
// "services/web/instances/i-1" is a nested key, so ls, lsdir and gets see
// directories, as the trees of config sets will give them. The output
// must be the case's want byte for byte, or its error.
func TestConfdTargetRendersTestdata(t *testing.T) {
	const zkRoot = "/zk/app"
	cases, err := os.ReadDir("../internal/confd/testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		dir := filepath.Join("../internal/confd/testdata", c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			var res struct {
				Prefix string
				Keys   []string
				Env    map[string]string
				Tree   map[string]string
			}
			b, err := os.ReadFile(filepath.Join(dir, "resource.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			tmpls, _ := filepath.Glob(filepath.Join(dir, "*.tmpl"))
			text, err := os.ReadFile(tmpls[0])
			if err != nil {
				t.Fatal(err)
			}
			items := map[string][]byte{}
			for k, v := range res.Tree {
				items[strings.TrimPrefix(k, "/")] = []byte(v)
			}
			for k, v := range res.Env {
				t.Setenv(k, v)
			}
			spec := confdSpec("x", filepath.Join(t.TempDir(), "out"), string(text), zkRoot, path.Join(zkRoot, res.Prefix), res.Keys...)
			spec.TemplatePath = tmpls[0]
			got, err := planOne(t, spec, agent.NewSnapshot(1, items))
			if want, rerr := os.ReadFile(filepath.Join(dir, "want-error")); rerr == nil {
				if err == nil || !strings.HasSuffix(err.Error(), "render: "+strings.TrimSuffix(string(want), "\n")) {
					t.Fatalf("error:\n got %v\nwant ...render: %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "want"))
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("output differs from %s/want\n got %q\nwant %q", dir, got, want)
			}
		})
	}
}

// TestConfdTargetKeysAndPrefix: the resource's prefix and keys decide
// what the template sees, at the items' ZooKeeper paths: with the root as
// prefix, item "host" is /host; a key with no node fails the render,
// naming the key and the node.
func TestConfdTargetKeysAndPrefix(t *testing.T) {
	snap := agent.NewSnapshot(3, map[string][]byte{
		"host": []byte("db1"), "port": []byte("5432"), "database/user": []byte("app"),
	})
	dest := filepath.Join(t.TempDir(), "out")
	text := `{{getv "/host"}}:{{getv "/port" "1"}} {{exists "/database/user"}} [{{join (ls "/") ","}}]`
	for _, tt := range []struct {
		prefix string
		keys   []string
		want   string
	}{
		// ls "/" lists the leaves directly under "/" only (memkv).
		{"/myapp", []string{"/"}, "db1:5432 true [host,port]"},
		{"/myapp", []string{"/host"}, "db1:1 false [host]"},
		{"/", []string{"/myapp/host"}, ""}, // the template reads /myapp/host, not /host
	} {
		got, err := planOne(t, confdSpec("k", dest, text, "/myapp", tt.prefix, tt.keys...), snap)
		if tt.want == "" {
			if err == nil || !strings.Contains(err.Error(), `error calling getv: key does not exist: /host`) {
				t.Errorf("prefix %s keys %v: %q, %v", tt.prefix, tt.keys, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("prefix %s keys %v: %q, %v; want %q", tt.prefix, tt.keys, got, err, tt.want)
		}
	}
	_, err := planOne(t, confdSpec("k", dest, text, "/myapp", "/myapp", "/host", "/nginx"), snap)
	if err == nil || !strings.HasSuffix(err.Error(), `render: template k.tmpl: resource key "/nginx": no node /myapp/nginx (confd's ZooKeeper backend fails the resource: zk: node does not exist)`) {
		t.Fatalf("a resource key without a node: %v", err)
	}
}

// TestConfdTargetBudget: a confd template whose loops a key controls is
// stopped by the render budget like any template target.
func TestConfdTargetBudget(t *testing.T) {
	snap := agent.NewSnapshot(1, map[string][]byte{"n": []byte("100000")})
	spec := confdSpec("loop", filepath.Join(t.TempDir(), "out"),
		`{{$n := atoi (getv "/n")}}{{range seq 1 $n}}{{range seq 1 $n}}{{end}}{{end}}`, "/r", "/r", "/")
	spec.RenderSteps = 1000
	_, err := planOne(t, spec, snap)
	if !errors.Is(err, template.ErrBudgetExceeded) || !strings.Contains(err.Error(), "template loop.tmpl: step budget exceeded: more than 1000 steps") {
		t.Fatalf("steps: %v", err)
	}
	spec.RenderSteps, spec.RenderTimeout = math.MaxInt64, 100*time.Millisecond
	_, err = planOne(t, spec, snap)
	if !errors.Is(err, template.ErrBudgetExceeded) || !strings.Contains(err.Error(), "time budget exceeded: still running after 100ms") {
		t.Fatalf("time: %v", err)
	}
}

// TestConfdTargetRefusedAndValues: a template that names a refused
// function does not compile; an error that would quote a value is
// withheld.
func TestConfdTargetRefusedAndValues(t *testing.T) {
	_, err := agent.NewRenderer([]agent.TargetSpec{confdSpec("d", "/tmp/x", `{{datetime}}`, "/r", "/r", "/")}, agent.ApplyAll, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `target "d": render: d.tmpl:1:2: datetime is not available in zkconf`) {
		t.Fatalf("datetime: %v", err)
	}
	snap := agent.NewSnapshot(1, map[string][]byte{"n": []byte("s3cr3t")})
	_, err = planOne(t, confdSpec("a", filepath.Join(t.TempDir(), "out"), `{{atoi (getv "/n")}}`, "/r", "/r", "/"), snap)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "error calling atoi: execution failed (details withheld") {
		t.Fatalf("atoi of a value: %v", err)
	}
}

// TestConfdTargetKeysChangeRenders: a configuration that changes only a
// confd target's keys renders the generation again (the output in place
// was made from other keys).
func TestConfdTargetKeysChangeRenders(t *testing.T) {
	snap := agent.NewSnapshot(1, map[string][]byte{"a": []byte("A"), "b": []byte("B")})
	dest := filepath.Join(t.TempDir(), "out")
	text := `{{range getvs "/*"}}{{.}}{{end}}`
	r, err := agent.NewRenderer([]agent.TargetSpec{confdSpec("c", dest, text, "/r", "/r", "/a")}, agent.ApplyAll, testLog(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out := r.Apply(ctx, snap); out.Err != nil {
		t.Fatal(out.Err)
	}
	if err := r.Configure([]agent.TargetSpec{confdSpec("c", dest, text, "/r", "/r", "/a", "/b")}, agent.ApplyAll); err != nil {
		t.Fatal(err)
	}
	if out := r.Apply(ctx, snap); out.Err != nil || out.Skipped {
		t.Fatalf("after the keys changed: %+v", out)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "AB" {
		t.Fatalf("%s: %q, %v; want AB", dest, b, err)
	}
}

// BenchmarkConfdRender renders an nginx upstream of 1,000 servers from
// 1,000 items through a confd target (key tree, resource view, store and
// template, every render).
func BenchmarkConfdRender(b *testing.B) {
	items := map[string][]byte{}
	for i := range 1000 {
		items[fmt.Sprintf("upstream-app%04d", i)] = fmt.Appendf(nil, "10.0.%d.%d:8080", i/256, i%256)
	}
	snap := agent.NewSnapshot(1, items)
	spec := confdSpec("nginx", filepath.Join(b.TempDir(), "out"),
		"upstream app {\n{{- range gets \"/upstream-*\"}}\n    server {{.Value}}; # {{base .Key}}\n{{- end}}\n}\n", "/myapp", "/myapp", "/")
	r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Plan(snap); err != nil {
			b.Fatal(err)
		}
	}
}
