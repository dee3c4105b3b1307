package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRewrite: links to installed files and directories (with anchors,
// relative to the linking file) stay; links and images to what is not
// installed become their text.
func TestRewrite(t *testing.T) {
	files := []string{"README.md", "docs/install.md", "docs/cli/confagent.md", "examples/kubernetes/README.md"}
	in := "[install](docs/install.md#x) [cli](cli/confagent.md) [k8s](examples/kubernetes) [tools/](tools) " +
		"![shot](docs/dashboard/root.png) [web](https://example.com/) [here](#top) [up](../Dockerfile)"
	got := rewrite("README.md", in, files)
	want := "[install](docs/install.md#x) cli (in the source tree) [k8s](examples/kubernetes) tools/ (in the source tree) " +
		"shot [web](https://example.com/) [here](#top) up (in the source tree)"
	if got != want {
		t.Errorf("README.md:\n got %s\nwant %s", got, want)
	}
	if got := rewrite("docs/install.md", "[cli](cli/confagent.md) [readme](../README.md)", files); got != "[cli](cli/confagent.md) [readme](../README.md)" {
		t.Errorf("docs/install.md: %s", got)
	}
}

// TestInstall installs the repository's documentation and checks that
// every relative link in it resolves.
func TestInstall(t *testing.T) {
	dest := t.TempDir()
	if err := install("../../..", dest); err != nil {
		t.Fatal(err)
	}
	files, err := list("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dest, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[3], "#")
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(dest, filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which is not installed", f, m[3])
			}
		}
	}
}
