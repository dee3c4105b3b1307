package agent

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkconf/zkconf/internal/targets"
)

// TestOfflineRendersAsRenderTo: what confagent render and confpush
// publish --render-with run (targets.Offline, without this package) writes
// the same files, with the same results and error texts, as
// Renderer.RenderTo, for every kind of target: a file, a dir with a prefix
// and globs, a Go template with host facts and sprig, a confd template, a
// missing item, a failing and a passing check, and several roots (a
// missing one included).
func TestOfflineRendersAsRenderTo(t *testing.T) {
	dest := t.TempDir()
	specs := []TargetSpec{
		{Name: "f", Kind: KindFile, Item: "app.conf", Dest: filepath.Join(dest, "f.conf"), Check: "test -s {{.src}}"},
		{Name: "d", Kind: KindDir, Prefix: "conf.d/", Items: []string{"*.conf"}, Dest: filepath.Join(dest, "d")},
		{Name: "g", Kind: KindTemplate, Dest: filepath.Join(dest, "g"),
			Template: `{{ hostname }} {{ label "env" }} {{ label "hostname" }} {{ item "app.conf" | upper }} {{ names | len }} {{ generation }}`},
		{Name: "c", Kind: KindTemplate, Dest: filepath.Join(dest, "c"), Syntax: SyntaxConfd, TemplatePath: "/x/c.tmpl",
			Template: `{{ getv "/app.conf" }}{{ range ls "/conf.d" }} {{ . }}{{ end }}`,
			Confd:    ConfdResource{Root: "/r", Prefix: "/r", Keys: []string{"/"}}},
		{Name: "missing", Kind: KindFile, Item: "nope", Dest: filepath.Join(dest, "m")},
		{Name: "failing", Kind: KindFile, Item: "app.conf", Dest: filepath.Join(dest, "x"), Check: "echo first; echo last line >&2; exit 3"},
	}
	items := map[string][]byte{"app.conf": []byte("port=1"), "conf.d/a.conf": []byte("a"), "conf.d/b.txt": []byte("b"), "conf.d/sub/c.conf": []byte("c")}
	labels := map[string]string{"env": "prod"}
	same(t, specs, labels, NewSnapshot(0, items), targets.NewSnapshot(0, items))

	rootSpecs := []TargetSpec{
		{Name: "own", Kind: KindFile, Root: "a", Item: "v", Dest: filepath.Join(dest, "own")},
		{Name: "both", Kind: KindTemplate, Root: "a", Roots: []string{"b"}, Dest: filepath.Join(dest, "both"),
			Template: `{{ item "v" }}+{{ item "b" "w" }}`},
		{Name: "gone", Kind: KindDir, Root: "c", Dest: filepath.Join(dest, "gone")},
	}
	roots := map[string]map[string][]byte{"a": {"v": []byte("A")}, "b": {"w": []byte("B")}}
	same(t, rootSpecs, nil, NewRootsSnapshot(0, roots), targets.NewRootsSnapshot(0, roots))
}

// same renders specs with a Renderer and with targets.Offline and fails
// on any difference.
func same(t *testing.T, specs []TargetSpec, labels map[string]string, snap Snapshot, tsnap targets.Snapshot) {
	t.Helper()
	r, err := NewRenderer(specs, ApplyAll, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.SetLabels(HostLabels(labels))
	var ts []targets.Spec
	for _, s := range specs {
		ts = append(ts, s.internal())
	}
	o, err := targets.CompileOffline(ts, labels)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	want, err := r.RenderTo(ctx, snap, dirA, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.RenderTo(ctx, tsnap, dirB, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("offline rendered %d targets, RenderTo %d", len(got), len(want))
	}
	text := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	for i, w := range want {
		g := got[i]
		rel := func(p string, dir string) string {
			if p == "" {
				return ""
			}
			r, _ := filepath.Rel(dir, p)
			return r
		}
		if g.Target != w.Target || rel(g.Path, dirB) != rel(w.Path, dirA) || text(g.Err) != text(w.Err) ||
			g.Checked != w.Checked || text(g.CheckErr) != text(w.CheckErr) {
			t.Errorf("target %s: offline %+v, RenderTo %+v", w.Target, g, w)
		}
	}
	if a, b := tree(t, dirA), tree(t, dirB); !maps.Equal(a, b) {
		t.Errorf("offline wrote %q, RenderTo %q", b, a)
	}
	if len(tree(t, dirA)) == 0 {
		t.Fatal("nothing rendered")
	}
}

// tree is every regular file below dir by its path below dir.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
