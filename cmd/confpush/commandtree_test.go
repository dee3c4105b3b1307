package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestPlainPublish: the arguments commandTree builds the publish command
// alone for, and the ones it leaves to the whole tree.
func TestPlainPublish(t *testing.T) {
	rootFlags := newRoot().bareRoot().PersistentFlags()
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"publish", "dir"}, true},
		{[]string{"publish"}, true},
		{[]string{"--zk", "h:1", "--root", "/r", "--timeout", "5s", "publish", "dir", "--dry-run"}, true},
		{[]string{"--zk=h:1", "--json", "publish", "dir"}, true},
		{[]string{"--json=false", "publish", "dir"}, true},
		{[]string{"--config", "c.yaml", "publish", "dir"}, true},
		{[]string{"publish", "dir", "-m", "why"}, true},
		// "publish" is --config's value here; "dir" is the command.
		{[]string{"--config", "publish", "dir"}, false},
		{[]string{"publish", "--help"}, false},
		{[]string{"publish", "dir", "-h"}, false},
		{[]string{"publish", "--help=true"}, false},
		{[]string{"-h", "publish"}, false},
		{[]string{"--help", "publish"}, false},
		{[]string{"--version"}, false},
		{[]string{"-v", "publish"}, false},
		{[]string{"--bogus", "publish", "dir"}, false},
		{[]string{"--", "publish", "dir"}, false},
		{[]string{"diff", "dir"}, false},
		{[]string{"pub", "dir"}, false},
		{[]string{"help", "publish"}, false},
		{[]string{"__complete", "publish", ""}, false},
		{[]string{"rollout", "status"}, false},
		{nil, false},
	} {
		if got := plainPublish(tc.args, rootFlags); got != tc.want {
			t.Errorf("plainPublish(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestCommandTreeForConfigFile: a publish that names a configuration file
// gets the whole tree at once (the file's keys are every command's flags).
func TestCommandTreeForConfigFile(t *testing.T) {
	for _, args := range [][]string{
		{"--config", "c.yaml", "publish", "dir"},
		{"--config=c.yaml", "publish", "dir"},
		{"publish", "dir", "--config", "c.yaml"},
	} {
		a := newRoot()
		if a.commandTree(args); a.publishOnly {
			t.Errorf("%q: publish-only tree", args)
		}
	}
	a := newRoot()
	if a.commandTree([]string{"publish", "dir"}); !a.publishOnly {
		t.Fatal("a plain publish: whole tree")
	}
	t.Setenv("CONFPUSH_CONFIG", "c.yaml")
	a = newRoot()
	if a.commandTree([]string{"publish", "dir"}); a.publishOnly {
		t.Error("CONFPUSH_CONFIG set: publish-only tree")
	}
}

// TestPublishOnlyTreeAsWhole: the tree built for a plain publish gives the
// publish command the same flags, help and root flags as the whole tree,
// and a publish run on it answers as on the whole tree: cobra's refusals,
// configure's, the input's, and a configuration file's keys (any
// command's flag is a key) when the file is named only after the tree was
// built (configure builds the whole tree then).
func TestPublishOnlyTreeAsWhole(t *testing.T) {
	publishIn := func(root *cobra.Command) *cobra.Command {
		t.Helper()
		c, _, err := root.Find([]string{"publish"})
		if err != nil || c.Name() != "publish" {
			t.Fatalf("no publish command: %v", err)
		}
		return c
	}
	only := newRoot()
	alone := only.commandTree([]string{"publish", "dir"})
	if !only.publishOnly || len(alone.Commands()) > 3 {
		t.Fatalf("commandTree built %d commands for a plain publish (publishOnly %v)", len(alone.Commands()), only.publishOnly)
	}
	whole := newRoot().rootCommand()
	p, wp := publishIn(alone), publishIn(whole)
	for _, s := range []struct{ name, got, want string }{
		{"usage", p.UsageString(), wp.UsageString()},
		{"long", p.Long, wp.Long},
		{"example", p.Example, wp.Example},
		{"use", p.Use, wp.Use},
		{"short", p.Short, wp.Short},
		{"flags", describeFlags(p.Flags()), describeFlags(wp.Flags())},
		{"inherited flags", describeFlags(p.InheritedFlags()), describeFlags(wp.InheritedFlags())},
		{"root flags", describeFlags(alone.Flags()), describeFlags(whole.Flags())},
	} {
		if s.got != s.want {
			t.Errorf("publish's %s differ:\npublish only:\n%s\nwhole tree:\n%s", s.name, s.got, s.want)
		}
	}

	refused := closedPort(t)
	dir := writeFiles(t, t.TempDir(), map[string]string{"a": "a"})
	bad := writeConfig(t, "zookeper:\n  servers: ["+refused+"]\nsesion-timeout: 5s\nbogus: 1\n")
	// listen is serve's flag, fail-on-error status's: keys of the same
	// file for every command.
	others := writeConfig(t, "zookeeper:\n  servers: ["+refused+"]\nlisten: 127.0.0.1:0\nfail-on-error: true\n")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		config string // CONFPUSH_CONFIG once the tree is built
		args   []string
	}{
		{"", []string{"publish"}},
		{"", []string{"publish", dir, "--bogus"}},
		{"", []string{"--json", "publish", dir, "--bogus"}},
		{"", []string{"--timeout", "0s", "publish", dir}},
		{"", []string{"--json", "--root", "relative", "publish", dir}},
		{"", []string{"--zk", refused, "publish", missing}},
		{"", []string{"--json", "--zk", refused, "publish", missing}},
		{bad, []string{"publish", dir}},
		{others, []string{"publish", missing}},
		{others, []string{"--json", "publish", missing}},
	} {
		args := tc.args
		a, w := newApp(new(bytes.Buffer), new(bytes.Buffer)), newApp(new(bytes.Buffer), new(bytes.Buffer))
		tree := a.commandTree(args)
		if !a.publishOnly {
			t.Fatalf("%q: not run on the publish-only tree", args)
		}
		if tc.config != "" {
			t.Setenv("CONFPUSH_CONFIG", tc.config)
		}
		code := a.execute(tree, args, nil)
		wcode := w.execute(w.rootCommand(), args, nil)
		if tc.config != "" {
			t.Setenv("CONFPUSH_CONFIG", "")
		}
		got := fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, a.stdout, a.stderr)
		want := fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", wcode, w.stdout, w.stderr)
		if got != want {
			t.Errorf("%q:\npublish-only tree: %s\nwhole tree: %s", args, got, want)
		}
		if strings.Contains(got, "unknown key") && tc.config == others {
			t.Errorf("%q: another command's flag refused as a key: %s", args, got)
		}
	}
}

// describeFlags lists every property of fs's flags that help, parsing or
// the configuration file see, one line per flag.
func describeFlags(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		fmt.Fprintf(&b, "%s|%s|%s|%s|%q|%q|%v|%q|%q|%v\n", f.Name, f.Shorthand, f.Value.Type(), f.DefValue, f.NoOptDefVal,
			f.Usage, f.Hidden, f.Deprecated, f.ShorthandDeprecated, f.Annotations)
	})
	return b.String()
}
