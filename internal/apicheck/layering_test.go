package apicheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestInternalPackagesAreLeaves: no package under internal/ imports a
// public package (docs/design.md, "Packages"). What needs the public
// packages and serves one binary lives under cmd/ (cmd/internal/config,
// cmd/confpush/internal/...); test support that runs agents and publishers
// sits beside the package it serves (fleet/fleettest).
func TestInternalPackagesAreLeaves(t *testing.T) {
	public := map[string]bool{}
	for _, p := range publicPackages(t) {
		public[p] = true
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if public[imp] {
				t.Errorf("%s imports the public package %s: internal/ holds leaves; move it under cmd/ if only a binary needs it", f[0], imp)
			}
		}
	}
}

// toolsInternal is every package of internal/ the tools module may import,
// and why (docs/design.md, "The tools module"). Each is a leaf the tools
// use as the main module's own tests do; a refactor of one of them must
// build and vet tools/ too (make lint does both modules).
var toolsInternal = map[string]string{
	"zktest":     "test support: the real ZooKeeper servers every test and benchmark runs against",
	"faultproxy": "test support: the network faults chaos injects between agents and servers",
	"layout":     "the znode layout (docs/design.md) the chaos checker and the benchmarks read raw, as an independent observer",
	"render":     "the on-disk layout of dir targets (..data) benchmarks time and the checker reads",
	"template":   "the chaos checker's oracle: what a template target must contain, rendered by the agent's own engine",
	"work":       "context-bound Sleep and Parallel",
	"logfilter":  "the benchmarks' quiet logger",
	"benchshape": "confbench latency's template, which the main module's Go benchmarks measure too",
}

// TestToolsInternalImports: the tools module imports no package of
// internal/ beyond toolsInternal, and every entry there is still used, so
// that the list (and docs/design.md) says what an internal refactor can
// break in the second module.
func TestToolsInternalImports(t *testing.T) {
	used := map[string][]string{}
	root := filepath.Join("..", "..", "tools")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, s := range f.Imports {
			imp, _ := strconv.Unquote(s.Path.Value)
			if rest, ok := strings.CutPrefix(imp, module+"/internal/"); ok {
				used[rest] = append(used[rest], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, files := range used {
		if _, ok := toolsInternal[p]; !ok {
			t.Errorf("tools imports internal/%s (%s): use a public package, or add it to toolsInternal and docs/design.md with the reason", p, strings.Join(files, ", "))
		}
	}
	for p := range toolsInternal {
		if _, ok := used[p]; !ok {
			t.Errorf("toolsInternal lists internal/%s, which tools no longer imports: remove it (and from docs/design.md)", p)
		}
	}
	if len(used) == 0 {
		t.Fatalf("no import of internal/ found under %s: is the tools module still there?", root)
	}
}

// notInConfpush are packages confpush must not link, and why: its start
// is part of every publish (issue 27: start → exit within 1.5× a raw
// connect-Multi-close). What confpush needs of the agent's rendering
// (publish --render-with, an agent configuration's keys) is in
// internal/targets and cmd/internal/config, which do not import them.
var notInConfpush = map[string]string{
	module + "/agent": "the daemon, its metrics and the cache: --render-with renders through cmd/internal/offline and internal/targets",
	module + "/cache": "the follower's cache, linked only through package agent",
	"github.com/prometheus/client_golang/prometheus": "the agent's metrics: about a tenth of confpush's start in package init",
	"google.golang.org/protobuf/proto":               "prometheus' wire format; its init reads the executable (detrand)",
}

// TestConfpushLinksNoAgent: confpush's dependency graph holds none of
// notInConfpush.
func TestConfpushLinksNoAgent(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/cmd/confpush").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	if !deps[module+"/cmd/internal/offline"] {
		t.Fatalf("confpush no longer links cmd/internal/offline: is this the right package list? (%d packages)", len(deps))
	}
	for p, why := range notInConfpush {
		if deps[p] {
			t.Errorf("confpush links %s (%s); find the import with: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/confpush | grep %s", p, why, p)
		}
	}
}

// docGenerator are the packages that generate the CLI reference (docs/cli,
// docs/man): only the tests that check and rewrite it link them (make
// docs), never a binary. In confagent their code, about 0.3 MB, would be
// resident in every agent (the kernel maps file pages in around every
// page touched); in confpush, blackfriday's package initialisation costs
// every start.
var docGenerator = []string{
	module + "/internal/clidocgen",
	"github.com/spf13/cobra/doc",
	"github.com/russross/blackfriday/v2",
	"github.com/cpuguy83/go-md2man/v2/md2man",
}

// TestBinariesLinkNoDocGenerator: neither binary's dependency graph holds
// any of docGenerator.
func TestBinariesLinkNoDocGenerator(t *testing.T) {
	for _, bin := range []string{"confagent", "confpush"} {
		out, err := exec.Command("go", "list", "-deps", module+"/cmd/"+bin).Output()
		if err != nil {
			t.Fatalf("go list -deps: %v", err)
		}
		deps := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			deps[p] = true
		}
		if !deps["github.com/spf13/cobra"] {
			t.Fatalf("%s does not link cobra: is this the right package list? (%d packages)", bin, len(deps))
		}
		for _, p := range docGenerator {
			if deps[p] {
				t.Errorf("%s links %s; find the import with: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/%s | grep %s", bin, p, bin, p)
			}
		}
	}
}

// promClient are the module paths of the Prometheus client and what it
// links: internal/promtext writes the agent's exposition instead. In
// confagent they were about 2.5 MB of text and 2 to 3 MiB of peak RSS
// (issue 27, docs/bench/latency-promtext-2026-11-27/notes.md).
var promClient = []string{"github.com/prometheus/", "google.golang.org/protobuf/"}

// TestBinariesLinkNoPrometheusClient: neither binary's dependency graph
// holds a package of promClient.
func TestBinariesLinkNoPrometheusClient(t *testing.T) {
	for _, bin := range []string{"confagent", "confpush"} {
		out, err := exec.Command("go", "list", "-deps", module+"/cmd/"+bin).Output()
		if err != nil {
			t.Fatalf("go list -deps: %v", err)
		}
		deps := strings.Fields(string(out))
		if bin == "confagent" && !slices.Contains(deps, module+"/internal/promtext") {
			t.Fatalf("confagent does not link internal/promtext: is this the right package list? (%d packages)", len(deps))
		}
		for _, p := range deps {
			for _, prefix := range promClient {
				if strings.HasPrefix(p, prefix) {
					t.Errorf("%s links %s; find the import with: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/%s | grep %s", bin, p, bin, p)
				}
			}
		}
	}
}
