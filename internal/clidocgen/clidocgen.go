// Package clidocgen generates zkconf's command-line reference (docs/cli
// markdown, docs/man pages) from a cobra command tree and compares committed
// copies with a fresh generation. It is apart from package clidoc, which the
// binaries link for their examples, so that cobra/doc and its markdown and
// man-page renderers are linked only where the reference is generated: the
// tests (TestCLIDocs, TestConfagentDocs; make docs), never a binary.
// blackfriday's package initialisation costs about a millisecond of every
// process start, and in the agent their code (about 0.3 MB) would be
// resident for the process's life: the kernel maps file pages in around
// every page touched.
package clidocgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date every man page carries: fixed, so that regenerating
// changes nothing unless the commands changed.
var manDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Generate writes root's markdown reference into mdDir and its man pages
// (section 1) into manDir, one file per command, replacing the files of
// root's binary there (those of a removed command go).
func Generate(root *cobra.Command, mdDir, manDir string) error {
	root.DisableAutoGenTag = true
	for _, d := range []string{mdDir, manDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("clidoc: %w", err)
		}
		old, err := readDir(d, root.Name())
		if err != nil {
			return err
		}
		for name := range old {
			if err := os.Remove(filepath.Join(d, name)); err != nil {
				return fmt.Errorf("clidoc: %w", err)
			}
		}
	}
	if err := doc.GenMarkdownTree(root, mdDir); err != nil {
		return fmt.Errorf("clidoc: markdown: %w", err)
	}
	date := manDate
	header := &doc.GenManHeader{Section: "1", Source: "zkconf", Manual: "zkconf manual", Date: &date}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		return fmt.Errorf("clidoc: man pages: %w", err)
	}
	return nil
}

// Stale generates root's reference into a temporary directory and lists
// every difference from the committed files in mdDir and manDir (only the
// files of root's binary, named after it): files that differ, are missing
// or are no longer generated.
func Stale(root *cobra.Command, mdDir, manDir string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "clidoc")
	if err != nil {
		return nil, fmt.Errorf("clidoc: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	genMD, genMan := filepath.Join(tmp, "cli"), filepath.Join(tmp, "man")
	if err := Generate(root, genMD, genMan); err != nil {
		return nil, err
	}
	var diffs []string
	for _, pair := range [][2]string{{genMD, mdDir}, {genMan, manDir}} {
		d, err := compareDir(pair[0], pair[1], root.Name())
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, d...)
	}
	return diffs, nil
}

func compareDir(generated, committed, prefix string) ([]string, error) {
	want, err := readDir(generated, prefix)
	if err != nil {
		return nil, err
	}
	have, err := readDir(committed, prefix)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for name, data := range want {
		path := filepath.Join(committed, name)
		old, ok := have[name]
		switch {
		case !ok:
			diffs = append(diffs, path+": missing")
		case !bytes.Equal(old, data):
			diffs = append(diffs, path+": differs from the commands")
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, filepath.Join(committed, name)+": no such command any more")
		}
	}
	slices.Sort(diffs)
	return diffs, nil
}

// readDir reads the files of dir whose names start with prefix followed by
// "." or "_" (confpush.md, confpush_get.md, confpush-get.1), so that two
// binaries share a directory.
func readDir(dir, prefix string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clidoc: %w", err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasPrefix(n, prefix) || len(n) == len(prefix) || !strings.ContainsRune("._-", rune(n[len(prefix)])) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("clidoc: %w", err)
		}
		out[n] = data
	}
	return out, nil
}
