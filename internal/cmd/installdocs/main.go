// Command installdocs installs zkconf's documentation (make install, make
// deb): README.md, docs/ and the examples an operator uses, keeping their
// layout, so that relative links between them keep working. A link to a
// file or directory that is not installed (tools/, docs/bench/, the Go
// example program) is replaced by its text and "(in the source tree)":
// the installed documentation links only to installed files.
//
// Usage, from the repository root:
//
//	go run ./internal/cmd/installdocs DESTDIR/usr/share/doc/zkconf
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// installed are the documentation files, as globs relative to the
// repository root.
var installed = []string{
	"README.md",
	"docs/*.md",
	"docs/cli/*.md",
	"docs/dashboard/*.png",
	"examples/agent/confagent.yaml",
	"examples/agent/templates/*",
	"examples/canary/README.md",
	"examples/kubernetes/README.md",
	"examples/kubernetes/*.yaml",
	"examples/monitoring/README.md",
	"examples/monitoring/*.yml",
	"examples/monitoring/*.json",
	"examples/quickstart/README.md",
	"examples/quickstart/*/*",
}

// link matches inline Markdown links and images: [text](target "title").
var link = regexp.MustCompile(`(!?)\[([^\]]*)\]\(([^)\s]+)(\s+"[^"]*")?\)`)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: installdocs DEST (run from the repository root)")
		os.Exit(2)
	}
	if err := install(".", os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "installdocs: %v\n", err)
		os.Exit(1)
	}
}

// install copies the documentation from src to dest, rewriting links to
// files that are not installed.
func install(src, dest string) error {
	files, err := list(src)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return err
		}
		if strings.HasSuffix(f, ".md") {
			b = []byte(rewrite(f, string(b), files))
		}
		out := filepath.Join(dest, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		// WriteFile keeps the mode of a file that exists (a reinstall).
		if err := os.Chmod(out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// list returns the installed files (slash-separated, relative to src),
// sorted.
func list(src string) ([]string, error) {
	var files []string
	for _, g := range installed {
		m, err := fs.Glob(os.DirFS(src), g)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s matches nothing", g)
		}
		for _, f := range m {
			if st, err := os.Stat(filepath.Join(src, f)); err == nil && st.Mode().IsRegular() && !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// rewrite replaces every relative link of the Markdown file f whose target
// is neither an installed file nor a directory holding one.
func rewrite(f, text string, files []string) string {
	return link.ReplaceAllStringFunc(text, func(m string) string {
		sub := link.FindStringSubmatch(m)
		image, label, target := sub[1] == "!", sub[2], sub[3]
		if isInstalled(f, target, files) {
			return m
		}
		if image {
			return label
		}
		return label + " (in the source tree)"
	})
}

// isInstalled reports whether target, a link in file f, leads to an
// installed file or directory; absolute URLs and in-page anchors count
// as installed.
func isInstalled(f, target string, files []string) bool {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
		return true
	}
	target, _, _ = strings.Cut(target, "#")
	p := path.Clean(path.Join(path.Dir(f), target))
	return slices.ContainsFunc(files, func(x string) bool { return x == p || strings.HasPrefix(x, p+"/") })
}
