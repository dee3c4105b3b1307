package apicheck

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
)

// TestExternalModule builds testdata/zkconfuser in a module of its own that
// requires zkconf (replaced by this checkout), as a user's program would,
// vets it, and runs it against a real ZooKeeper. The program names every
// error the public packages document for callers to branch on, so the
// build fails when one is unexported or moved to an internal package (which
// no other module may import); the run checks that the documented branches
// are the ones taken: a stale ExpectGeneration is a *publish.ConflictError,
// a bad name is a *publish.InputError, a publish under a read-only node
// matches zkclient.ErrPermission, a cache of an unpublished root says
// cache.ErrRootMissing, Wait after Close says cache.ErrClosed, a rollout
// without agents fails with fleet.ErrNoExpectedAgents, a canary nobody
// follows is a *rollout.EmptySelectionError, and a driver without a
// rollout is invalid input.
//
// It works offline: the module's go.sum is copied and GOPROXY=off, since
// every dependency is already in the module cache for this checkout. The
// user's go.mod carries the replace directives of zkconf's own go.mod (the
// patched go-zookeeper in third_party/), as README.md ("Using zkconf as a
// library") tells users to: a replace reaches no other module by itself.
func TestExternalModule(t *testing.T) {
	checkout := moduleRoot(t)
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "zkconfuser", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := readGoMod(t, checkout)
	gomod := "module example.com/zkconfuser\n\n" +
		"go " + mod.Go + "\n\n" +
		"require github.com/zkconf/zkconf v0.0.0\n\n" +
		"replace github.com/zkconf/zkconf => " + checkout + "\n"
	for _, r := range mod.Replace {
		if r.New.Version != "" || !strings.HasPrefix(r.New.Path, ".") {
			t.Fatalf("go.mod replaces %s by %s %s: the test copies only replaces by a directory of the checkout", r.Old.Path, r.New.Path, r.New.Version)
		}
		gomod += "replace " + r.Old.Path + " => " + filepath.Join(checkout, r.New.Path) + "\n"
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "zkconfuser")
	goCmd(t, dir, "build", "-o", bin, ".")
	goCmd(t, dir, "vet", ".")

	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--zk", zkc.ConnString(), "--root", "/config/app")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkconfuser: %v\n%s", err, out)
	}
	want := []string{
		"publish: generation 1, 2 items, added [app.json feature.txt]",
		"publish: generation 2, changed [feature.txt]",
		"stale publish: conflict (expected generation 1, live 2; ErrConflict true)",
		"name ../escape: invalid",
		"bad publish: invalid input (*InputError; ErrInvalidInput true)",
		"publish under a read-only node: permission denied",
		"history: generations [1 2]; 2 against 1 changed [feature.txt]",
		"diff: removed [feature.txt], empty false",
		`key tree: db/host="host", 0 skipped`,
		"cache: generation 2, workers=4, feature=on, state live",
		"cache of an unpublished root: root missing",
		"wait after close: closed",
		"rollout: no expected agents",
		"fleet: 0 agent(s): 0 at generation 2, 0 behind, 0 failing, 0 untrusted, 0 gone",
		"report: live generation 2, failing []",
		`canary: refused: "zone=a" selects none of the 0 expected agents`,
		"drive: invalid input",
	}
	var got []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("zkconfuser printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// moduleRoot is the directory of this checkout's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatalf("not inside the zkconf module (GOMOD=%q)", gomod)
	}
	return filepath.Dir(gomod)
}

// goMod is what the test takes from the checkout's go.mod: the go
// directive, so the user's module asks for the same language version, and
// the replace directives.
type goMod struct {
	Go      string
	Replace []struct {
		Old, New struct{ Path, Version string }
	}
}

func readGoMod(t *testing.T, checkout string) goMod {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(checkout, "go.mod")).Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod goMod
	if err := json.Unmarshal(out, &mod); err != nil || mod.Go == "" {
		t.Fatalf("no go directive in %s/go.mod (%v)", checkout, err)
	}
	return mod
}

// goCmd runs the go command in the user's module, offline: -mod=mod lets it
// add the requirements the program's imports need to go.mod, resolved from
// zkconf's own go.mod and the module cache, never the network.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
