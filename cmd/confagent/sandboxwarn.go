package main

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/zkconf/zkconf/cmd/internal/config"
)

// sandboxDoc is the section of docs/install.md that lists the commands the
// shipped units' sandbox breaks, with the override for each.
const sandboxDoc = `docs/install.md, "Commands the sandbox breaks"`

// sandboxRule is a command the shipped units' hardening breaks: which
// program (and arguments), which setting, and why.
type sandboxRule struct {
	programs []string
	setting  string
	why      string
}

// sandboxRules are what check-config warns about. JIT compilers map memory
// writable and executable, which MemoryDenyWriteExecute=yes refuses
// (CPython, perl, ruby without --yjit, and a JVM never started are not
// affected); testing a firewall ruleset sends it to the kernel over
// netlink, with CAP_NET_ADMIN (loading one too); podman and buildah need namespaces and
// mounts.
func sandboxRules() []sandboxRule {
	return []sandboxRule{
		{programs: []string{"java"}, setting: "MemoryDenyWriteExecute=yes",
			why: "the JVM maps its code cache writable and executable, and does not start"},
		{programs: []string{"node", "nodejs"}, setting: "MemoryDenyWriteExecute=yes",
			why: "V8 compiles JavaScript to machine code at run time (node --jitless does not)"},
		{programs: []string{"luajit"}, setting: "MemoryDenyWriteExecute=yes",
			why: "LuaJIT's JIT writes machine code (luajit -joff does not)"},
		{programs: []string{"pypy", "pypy3"}, setting: "MemoryDenyWriteExecute=yes",
			why: "PyPy's JIT writes machine code (pypy --jit off does not; CPython is not affected)"},
		{programs: []string{"nft"}, setting: "RestrictAddressFamilies= (no AF_NETLINK) and CapabilityBoundingSet= (no CAP_NET_ADMIN)",
			why: "nft talks to the kernel over netlink, to load a ruleset and to test one (nft -c)"},
		{programs: []string{"iptables-restore", "ip6tables-restore", "iptables-nft-restore", "ip6tables-nft-restore", "iptables-legacy-restore", "ip6tables-legacy-restore"},
			setting: "RestrictAddressFamilies= (no AF_NETLINK) and CapabilityBoundingSet= (no CAP_NET_ADMIN)",
			why:     "iptables-restore reads and writes the kernel's tables, to load rules and to test them (--test)"},
		{programs: []string{"podman", "buildah"}, setting: "RestrictNamespaces=yes, CapabilityBoundingSet= and ProtectSystem=strict",
			why: "a container needs namespaces, mounts and its storage under /var/lib/containers"},
		{programs: []string{"docker"}, setting: "none of the unit's settings",
			why: "the check's container runs under dockerd, outside the unit's sandbox: review what its image does with the staged file"},
	}
}

// sandboxWarnings names every check and reload command of cfg that the
// shipped units' sandbox breaks (or, for docker, escapes).
func sandboxWarnings(cfg *config.Config) []string {
	var w []string
	for _, t := range cfg.Targets {
		for _, c := range []struct{ kind, cmd string }{{"check", t.Check}, {"reload", t.Reload}} {
			words := shellWords(c.cmd)
			for _, r := range sandboxRules() {
				prog := slices.IndexFunc(words, func(s string) bool { return slices.Contains(r.programs, path.Base(s)) })
				if prog < 0 {
					continue
				}
				w = append(w, fmt.Sprintf("target %q: %s command runs %s, which the shipped unit's sandbox affects (%s): %s; the override is in %s",
					t.Name, c.kind, path.Base(words[prog]), r.setting, r.why, sandboxDoc))
			}
		}
	}
	return w
}

// shellWords splits a shell command into words closely enough to find the
// programs it runs: on blanks and the operators that separate commands,
// with quotes removed.
func shellWords(cmd string) []string {
	return strings.FieldsFunc(strings.NewReplacer(`"`, "", `'`, "").Replace(cmd), func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|()`$<>", r)
	})
}
