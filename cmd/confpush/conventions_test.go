package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/viper"

	"github.com/zkconf/zkconf/internal/clidoc"
	"github.com/zkconf/zkconf/internal/clidocgen"
)

func newRoot() *app {
	return &app{stdout: io.Discard, stderr: io.Discard, v: viper.New()}
}

func TestCLIVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--version"}, &out, &errb); code != 0 {
		t.Fatalf("--version: exit %d\n%s%s", code, out.String(), errb.String())
	}
	line := out.String()
	for _, want := range []string{"confpush ", "(commit ", ", go1."} {
		if !strings.Contains(line, want) {
			t.Fatalf("--version prints %q: lacks %q", line, want)
		}
	}
}

// TestCLICompletionScript: the completion command prints its script on
// the command's output.
func TestCLICompletionScript(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out, errb bytes.Buffer
		if code := run([]string{"completion", shell}, &out, &errb); code != 0 || !strings.Contains(out.String(), "confpush") ||
			!strings.Contains(out.String(), "__complete") {
			t.Fatalf("completion %s: exit %d\n%s%s", shell, code, out.String(), errb.String())
		}
	}
}

// TestCLIExamples: every command's help has an Examples section, and the
// table of examples names no command that is gone.
func TestCLIExamples(t *testing.T) {
	root := newRoot().rootCommand()
	if missing := clidoc.MissingExamples(root); len(missing) > 0 {
		t.Errorf("commands without examples: %s: add them to the examples map in cmd/confpush/conventions.go",
			strings.Join(missing, ", "))
	}
	if unknown := clidoc.SetExamples(root, examples()); len(unknown) > 0 {
		t.Errorf("examples in cmd/confpush/conventions.go for commands that do not exist: %q", unknown)
	}
	var out bytes.Buffer
	run([]string{"rollback", "--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "Examples:\n  # Publish generation 41") {
		t.Errorf("rollback --help has no Examples section:\n%s", out.String())
	}
}

// TestCLIExitCodesOnce: the exit-code table is in the root's help only;
// the commands' help points to it.
func TestCLIExitCodesOnce(t *testing.T) {
	var out bytes.Buffer
	run([]string{"--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), exitCodesHelp) {
		t.Errorf("confpush --help lacks the exit-code table:\n%s", out.String())
	}
	out.Reset()
	run([]string{"publish", "--help"}, &out, io.Discard)
	if strings.Contains(out.String(), "Exit codes:\n") || !strings.Contains(out.String(), exitCodesPointer) {
		t.Errorf("publish --help repeats the exit-code table or does not point to it:\n%s", out.String())
	}
}

// TestCLIDocs fails when docs/cli or docs/man differ from what the
// commands generate. ZKCONF_UPDATE_DOCS=1 (make docs) rewrites them.
func TestCLIDocs(t *testing.T) {
	root := newRoot().rootCommand()
	if os.Getenv(clidoc.UpdateEnv) == "1" {
		if err := clidocgen.Generate(root, "../../docs/cli", "../../docs/man"); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := clidocgen.Stale(newRoot().rootCommand(), "../../docs/cli", "../../docs/man")
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("the CLI reference is stale; run '%s' and commit docs/cli and docs/man:\n  %s",
			clidoc.Regenerate, strings.Join(stale, "\n  "))
	}
}

// complete runs confpush's shell-completion request for args against srv
// and returns the candidates (without descriptions) and the directive line.
func (c cli) complete(args ...string) ([]string, string) {
	c.t.Helper()
	// __complete reads the flags after the command it completes.
	full := append([]string{"__complete", args[0], "--zk", c.zk, "--root", c.root}, args[1:]...)
	var out, errb bytes.Buffer
	if code := run(full, &out, &errb); code != 0 {
		c.t.Fatalf("%v: exit %d\n%s%s", full, code, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var cands []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		cands = append(cands, name)
	}
	return cands, lines[len(lines)-1]
}

// TestCLICompletion: generations and item names come from the live root.
func TestCLICompletion(t *testing.T) {
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/complete/app"}
	for i, content := range []string{"one", "two", "three"} {
		dir := writeFiles(t, t.TempDir(), map[string]string{"app.conf": content, "db.json": `{"n": ` + string(rune('1'+i)) + `}`})
		c.run("publish", dir).want(t, 0, "published generation")
	}
	c.run("publish", "--prune", writeFiles(t, t.TempDir(), map[string]string{"app.conf": "four"})).want(t, 0, "published generation 4")

	gens, directive := c.complete("rollback", "--to", "")
	if strings.Join(gens, ",") != "4,3,2,1" {
		t.Errorf("rollback --to offers %q, want the generations newest first", gens)
	}
	if directive != ":36" { // NoFileComp|KeepOrder
		t.Errorf("directive %q", directive)
	}
	if gens, _ := c.complete("diff", "--gen", "3"); strings.Join(gens, ",") != "3" {
		t.Errorf("diff --gen 3 offers %q", gens)
	}
	if items, _ := c.complete("get", ""); strings.Join(items, ",") != "app.conf" {
		t.Errorf("get offers %q, want the live items", items)
	}
	if items, _ := c.complete("get", "--gen", "2", "d"); strings.Join(items, ",") != "db.json" {
		t.Errorf("get --gen 2 d offers %q, want generation 2's items starting with d", items)
	}

	// Unreachable: no candidates, no error in the shell.
	down := cli{t: t, zk: "127.0.0.1:1", root: "/complete/app"}
	// (":36" is NoFileComp|KeepOrder: no file names offered either.)
	if gens, directive := down.complete("rollback", "--to", ""); len(gens) != 0 || directive != ":36" {
		t.Errorf("with ZooKeeper unreachable: %q %s", gens, directive)
	}
}
